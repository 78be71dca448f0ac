package cli

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"

	"gopkg.in/yaml.v3"

	"github.com/hangar-mcp/hangar/internal/config"
)

var importCmd = &command{
	name:  "import",
	args:  "hyper-mcp FILE",
	short: "print the Hangar configuration of another host's configuration",
	long: `Import reads the configuration file of another MCP plugin host and prints the
equivalent Hangar configuration (YAML) on standard output. Supported:

  hyper-mcp   hyper-mcp's config.json or config.yaml: its plugins (as a list
              of {name, url} or as a mapping of names), their runtime_config
              grants and limits, and its oci signature settings.

Plugin names, sources (oci://, file://, https://), allowed_hosts,
allowed_paths, env_vars, memory_limit and tool_name_prefix are translated;
see the migration table in docs/sources.md. What Hangar does differently or does
not support (skip_tools and the other filters, auths, keyring secrets, s3://
and http:// URLs, https:// URLs without a sha256 pin, signature checks
without a signer identity) is listed on standard error and, where it
concerns one plugin, as a comment in the output. The output is checked with
Hangar's configuration loader (relative to the input file's directory);
problems it finds are listed on standard error too.

Import changes no file. Save the output, for example
  hangar import hyper-mcp config.json > hangar.yaml
then review it, and run "hangar pull --config hangar.yaml" to fetch the
plugins, check their signatures and write hangar.lock.`,
	flags: func(*flag.FlagSet) {},
}

func init() { importCmd.run = runImport }

func runImport(ctx context.Context, env *Env, args []string) error {
	fs := importCmd.flagSet(env.Stderr)
	pos, err := importCmd.parse(env, fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 2 {
		importCmd.help(env.Stderr)
		return errUsage
	}
	if pos[0] != "hyper-mcp" {
		return fmt.Errorf("unknown format %q; supported: hyper-mcp", pos[0])
	}
	file := pos[1]
	data, err := readConfigInput(file)
	if err != nil {
		return err
	}
	out, notes, err := importHyperMCP(data, filepath.Ext(file))
	if err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	if _, err := env.Stdout.Write(out); err != nil {
		return err
	}
	// Check the result as Hangar will read it, beside the input file.
	abs, _ := filepath.Abs(file)
	if _, err := config.Parse(out, "(imported)", filepath.Dir(abs), func(name string) (string, bool) { return "set", true }); err != nil {
		for _, line := range strings.Split(err.Error(), "\n") {
			notes = append(notes, "the imported configuration does not load yet: "+line)
		}
	}
	for _, n := range notes {
		fmt.Fprintf(env.Stderr, "hangar import: %s\n", n)
	}
	return nil
}

// readConfigInput reads a regular file of at most config.MaxFileSize bytes.
func readConfigInput(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil {
		return nil, err
	} else if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file", path)
	}
	b, err := io.ReadAll(io.LimitReader(f, config.MaxFileSize+1))
	if err != nil {
		return nil, err
	}
	if len(b) > config.MaxFileSize {
		return nil, fmt.Errorf("%s: more than %d bytes", path, config.MaxFileSize)
	}
	return b, nil
}

// hyperPlugin is one plugin of a hyper-mcp configuration.
type hyperPlugin struct {
	name string
	url  string
	rc   map[string]any
	line int
}

// importer translates a hyper-mcp configuration.
type importer struct {
	notes   []string
	leftOut []string // comments for plugins that could not be imported
	oci     map[string]any
}

func (im *importer) note(format string, args ...any) {
	im.notes = append(im.notes, fmt.Sprintf(format, args...))
}

// importHyperMCP translates a hyper-mcp configuration (JSON or YAML; its
// TOML form is not read) into Hangar YAML, returning notes on what is not
// carried over.
func importHyperMCP(data []byte, ext string) ([]byte, []string, error) {
	if strings.EqualFold(ext, ".toml") {
		return nil, nil, fmt.Errorf("hyper-mcp's TOML form is not supported; convert it to JSON or YAML first")
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, nil, fmt.Errorf("not JSON or YAML: %v", err)
	}
	if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, nil, fmt.Errorf("not a hyper-mcp configuration: want an object with \"plugins\"")
	}
	var top map[string]any
	if err := doc.Content[0].Decode(&top); err != nil {
		return nil, nil, fmt.Errorf("not a hyper-mcp configuration: %v", err)
	}
	im := &importer{}
	var plugins []hyperPlugin
	for _, k := range sortedKeys(top) {
		switch k {
		case "plugins":
			plugins = im.plugins(doc.Content[0])
		case "oci":
			m, ok := top[k].(map[string]any)
			if !ok {
				im.note("oci: not an object; ignored")
				continue
			}
			im.oci = m
		case "auths":
			im.note("auths: not carried over; Hangar reads registry credentials from Docker's configuration (docker login or oras login), and https:// sources take no credentials")
		case "dynamic_loading":
			im.note("dynamic_loading: not supported; Hangar loads the plugins of its configuration file and reloads them when the file changes")
		default:
			im.note("%s: unknown hyper-mcp setting; ignored", k)
		}
	}
	if plugins == nil {
		return nil, nil, fmt.Errorf("not a hyper-mcp configuration: no \"plugins\"")
	}

	root := &yaml.Node{Kind: yaml.MappingNode}
	root.HeadComment = "Imported from a hyper-mcp configuration by hangar import. Review it, then run\n\"hangar pull --config FILE\" to fetch the plugins and write the lock file."
	list := &yaml.Node{Kind: yaml.SequenceNode}
	names := map[string]bool{}
	for _, p := range plugins {
		if n := im.plugin(p, names); n != nil {
			list.Content = append(list.Content, n)
		}
	}
	if len(list.Content) == 0 {
		list.Style = yaml.FlowStyle
	}
	if len(im.leftOut) > 0 {
		list.FootComment = strings.Join(im.leftOut, "\n")
	}
	root.Content = append(root.Content, str("plugins"), list)
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(root); err != nil {
		return nil, nil, err
	}
	enc.Close()
	out := buf.Bytes()
	if !bytes.HasSuffix(out, []byte("\n")) {
		out = append(out, '\n')
	}
	return out, im.notes, nil
}

// plugins reads hyper-mcp's plugins: a list of {name, url (or path),
// runtime_config}, or (newer versions) a mapping of names to {url,
// runtime_config}.
func (im *importer) plugins(top *yaml.Node) []hyperPlugin {
	var pn *yaml.Node
	for i := 0; i+1 < len(top.Content); i += 2 {
		if top.Content[i].Value == "plugins" {
			pn = top.Content[i+1]
		}
	}
	out := []hyperPlugin{}
	one := func(name string, n *yaml.Node, where string) {
		var m map[string]any
		if err := n.Decode(&m); err != nil {
			im.note("%s: not an object; skipped", where)
			return
		}
		p := hyperPlugin{name: name, line: n.Line}
		if p.name == "" {
			p.name, _ = m["name"].(string)
		}
		for _, k := range sortedKeys(m) {
			switch k {
			case "name":
			case "url", "path":
				p.url, _ = m[k].(string)
			case "runtime_config":
				if rc, ok := m[k].(map[string]any); ok {
					p.rc = rc
				} else if m[k] != nil {
					im.note("%s: runtime_config is not an object; ignored", where)
				}
			default:
				im.note("%s: unknown key %q; ignored", where, k)
			}
		}
		out = append(out, p)
	}
	switch {
	case pn == nil:
	case pn.Kind == yaml.SequenceNode:
		for i, it := range pn.Content {
			one("", it, fmt.Sprintf("plugins[%d]", i))
		}
	case pn.Kind == yaml.MappingNode:
		for i := 0; i+1 < len(pn.Content); i += 2 {
			one(pn.Content[i].Value, pn.Content[i+1], "plugins."+pn.Content[i].Value)
		}
	default:
		im.note("plugins: neither a list nor a mapping; nothing imported")
	}
	return out
}

var invalidNameRun = regexp.MustCompile(`[^a-z0-9_-]+`)

// plugin translates one plugin; nil if it cannot be.
func (im *importer) plugin(p hyperPlugin, names map[string]bool) *yaml.Node {
	label := p.name
	if label == "" {
		label = fmt.Sprintf("the plugin on line %d", p.line)
	}
	name := strings.Trim(invalidNameRun.ReplaceAllString(strings.ToLower(p.name), "-"), "-_")
	if len(name) > 64 {
		name = name[:64]
	}
	if name == "" {
		im.note("%s: no usable name; skipped", label)
		return nil
	}
	if names[name] {
		im.note("%s: the name %q is taken by another plugin; skipped", label, name)
		return nil
	}
	names[name] = true
	n := &yaml.Node{Kind: yaml.MappingNode}
	var comments []string
	if name != p.name {
		comments = append(comments, fmt.Sprintf("hyper-mcp name %q (Hangar names are lower case)", p.name))
	}
	add := func(k string, v *yaml.Node) { n.Content = append(n.Content, str(k), v) }
	add("name", str(name))

	src, verify, extra, ok := im.source(label, p.url)
	comments = append(comments, extra...)
	if !ok {
		im.note("%s: %s; left out (see the comment in the output)", label, strings.Join(extra, "; "))
		im.leftOut = append(im.leftOut, fmt.Sprintf("NOT IMPORTED: %s (url %s): %s", p.name, p.url, strings.Join(extra, "; ")))
		return nil
	}
	add("source", str(src))
	if verify != nil {
		add("verify", verify)
	}

	limits := &yaml.Node{Kind: yaml.MappingNode}
	grants := &yaml.Node{Kind: yaml.MappingNode}
	for _, k := range sortedKeys(p.rc) {
		v := p.rc[k]
		switch k {
		case "allowed_hosts":
			hosts := stringList(v)
			if hosts == nil && v != nil {
				comments = append(comments, "allowed_hosts is not a list of strings; not imported")
				continue
			}
			grants.Content = append(grants.Content, str("allowed_hosts"), flowList(hosts))
		case "allowed_paths":
			mounts := &yaml.Node{Kind: yaml.SequenceNode}
			for _, s := range stringList(v) {
				host, guest, _ := strings.Cut(s, ":")
				host, guest = strings.TrimSpace(host), strings.TrimSpace(guest)
				if guest == "" {
					guest = host
				}
				if !path.IsAbs(guest) {
					comments = append(comments, fmt.Sprintf("allowed_paths %q: the path in the plugin must be absolute; mounted at /%s", s, strings.TrimLeft(guest, "./")))
					guest = "/" + strings.TrimLeft(guest, "./")
				}
				mounts.Content = append(mounts.Content, &yaml.Node{Kind: yaml.MappingNode, Style: yaml.FlowStyle,
					Content: []*yaml.Node{str("host"), str(host), str("guest"), str(guest)}})
			}
			if len(mounts.Content) > 0 {
				grants.Content = append(grants.Content, str("allowed_paths"), mounts)
			}
		case "env_vars":
			m, ok := v.(map[string]any)
			if !ok {
				comments = append(comments, "env_vars is not an object; not imported")
				continue
			}
			env := &yaml.Node{Kind: yaml.MappingNode}
			for _, ek := range sortedKeys(m) {
				val := fmt.Sprint(m[ek])
				conv, problem := convertEnvValue(val)
				if problem != "" {
					comments = append(comments, fmt.Sprintf("env_vars.%s: %s", ek, problem))
					im.note("%s: env_vars.%s: %s", label, ek, problem)
				}
				env.Content = append(env.Content, str(ek), str(conv))
			}
			grants.Content = append(grants.Content, str("env"), env)
		case "memory_limit":
			s := fmt.Sprint(v)
			size, problem := convertSize(s)
			if problem != "" {
				comments = append(comments, "memory_limit "+problem)
				im.note("%s: memory_limit %s", label, problem)
				continue
			}
			limits.Content = append(limits.Content, str("memory"), str(size))
		case "tool_name_prefix":
			prefix, comment := convertPrefix(fmt.Sprint(v))
			if comment != "" {
				comments = append(comments, comment)
				im.note("%s: %s", label, comment)
			}
			if prefix != "" {
				add("prefix", str(prefix))
			}
		case "skip_tools", "skip_prompts", "skip_resources", "skip_resource_templates":
			comments = append(comments, k+": not supported; Hangar serves all of a plugin's "+strings.TrimPrefix(k, "skip_"))
			what := strings.ReplaceAll(strings.TrimPrefix(k, "skip_"), "_", " ")
			im.note("%s: imported with all its %s: %s is not supported, so those it skips are served too", label, what, k)
		case "allowed_secrets":
			comments = append(comments, "allowed_secrets: keyring secrets are not supported; pass them as env (${NAME} reads Hangar's environment)")
			im.note("%s: allowed_secrets (keyring entries) is not supported; pass secrets through grants.env with ${NAME}", label)
		default:
			comments = append(comments, fmt.Sprintf("runtime_config.%s: unknown; not imported", k))
			im.note("%s: runtime_config.%s is unknown; not imported", label, k)
		}
	}
	if len(limits.Content) > 0 {
		add("limits", limits)
	}
	if len(grants.Content) > 0 {
		add("grants", grants)
	}
	if len(comments) > 0 {
		n.HeadComment = strings.Join(comments, "\n")
	}
	return n
}

var ghcrOwner = regexp.MustCompile(`^ghcr\.io/([A-Za-z0-9-]+)/`)

// source translates a hyper-mcp plugin URL. ok is false when it cannot be
// carried over; extra says why, or what to review.
func (im *importer) source(label, raw string) (src string, verify *yaml.Node, extra []string, ok bool) {
	if strings.Contains(raw, "${") {
		extra = append(extra, "the URL refers to environment variables, which Hangar does not expand outside grants.env")
	}
	u, err := url.Parse(raw)
	if raw == "" || err != nil {
		return "", nil, append(extra, fmt.Sprintf("no usable url (%q)", raw)), false
	}
	switch strings.ToLower(u.Scheme) {
	case "oci":
		src = raw
		ref := strings.TrimPrefix(raw, "oci://")
		last := ref[strings.LastIndex(ref, "/")+1:]
		if !strings.Contains(last, ":") && !strings.Contains(last, "@") {
			src += ":latest"
			extra = append(extra, "hyper-mcp pulls :latest when no tag is given; the lock file pins what it resolves to")
		}
		v, vextra := im.verify(ref)
		return src, v, append(extra, vextra...), true
	case "file":
		return raw, nil, extra, true
	case "https":
		return "", nil, append(extra, "an https:// source needs a sha256 pin: run \"hangar pull "+raw+"\" and add the printed sha256"), false
	case "http":
		return "", nil, append(extra, "plain http:// is not allowed; publish the plugin over https:// (with a sha256 pin) or to an OCI registry"), false
	case "s3":
		return "", nil, append(extra, "s3:// sources are not supported; copy the module to a file, an https:// URL or an OCI registry"), false
	case "":
		// hyper-mcp's older files accepted plain paths.
		return raw, nil, extra, true
	}
	return "", nil, append(extra, fmt.Sprintf("the scheme %q is not supported", u.Scheme)), false
}

// verify builds the signature policy of an OCI plugin from hyper-mcp's oci
// settings.
func (im *importer) verify(ref string) (*yaml.Node, []string) {
	get := func(k string) string { s, _ := im.oci[k].(string); return s }
	if skip, _ := im.oci["insecure_skip_signature"].(bool); skip {
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: "false"},
			[]string{"hyper-mcp ran it with insecure_skip_signature: true; Hangar warns on every start while verify is false"}
	}
	issuer, subject := get("cert_issuer"), get("cert_email")
	if subject == "" {
		subject = get("cert_url")
	}
	root := "./trusted_root.json"
	notes := []string{"keyless signatures are checked against " + root + " (Hangar never fetches it: create it with \"cosign trusted-root create\" or copy Sigstore's from its TUF repository)"}
	if issuer != "" && subject != "" {
		return mapping("issuer", issuer, "subject", subject, "trusted_root", root), notes
	}
	// hyper-mcp checked for any Sigstore signature unless an identity was
	// set; Hangar wants the signer's identity. For GitHub packages, the
	// owner's workflows are the likely signers.
	if m := ghcrOwner.FindStringSubmatch(ref); m != nil {
		im.note("oci://%s: hyper-mcp accepted a signature by anyone; Hangar needs the signer: the import assumes a GitHub Actions workflow of %s; check it with \"cosign verify\" and narrow subject_regexp to the release workflow", ref, m[1])
		return mapping("issuer", "https://token.actions.githubusercontent.com",
				"subject_regexp", "https://github\\.com/"+regexp.QuoteMeta(m[1])+"/.+",
				"trusted_root", root),
			append(notes, "ASSUMED signer: a GitHub Actions workflow of "+m[1]+"; narrow subject_regexp to its release workflow",
				"Hangar reads Sigstore bundles attached as OCI referrers (cosign 3), not cosign 2's sha256-<hex>.sig tags")
	}
	im.note("oci://%s: hyper-mcp accepted a signature by anyone; Hangar needs the signer's key or identity: the import asks for ./cosign.pub", ref)
	return mapping("key", "./cosign.pub"), []string{"the signer's public key is assumed in ./cosign.pub; or use issuer, subject and trusted_root for keyless signatures"}
}

var envRefRe = regexp.MustCompile(`^\$\{[A-Za-z_][A-Za-z0-9_]*\}`)

// convertEnvValue rewrites a hyper-mcp env value for Hangar: ${NAME}
// stays, $${ (hyper-mcp's literal "${") stays, other "$" are doubled.
// ${NAME:-default} is reported.
func convertEnvValue(s string) (string, string) {
	var b strings.Builder
	problem := ""
	for i := 0; i < len(s); i++ {
		if s[i] != '$' {
			b.WriteByte(s[i])
			continue
		}
		switch rest := s[i:]; {
		case strings.HasPrefix(rest, "$${"):
			b.WriteString("$$")
			i++
		case envRefRe.MatchString(rest):
			m := envRefRe.FindString(rest)
			b.WriteString(m)
			i += len(m) - 1
		case strings.HasPrefix(rest, "${"):
			problem = "${NAME:-default} and other forms are not supported; only ${NAME}"
			b.WriteString("$$")
		default:
			b.WriteString("$$")
		}
	}
	return b.String(), problem
}

var sizeRe = regexp.MustCompile(`^\s*([0-9]+)\s*([A-Za-z]*)\s*$`)

// hangarPrefix is what Hangar accepts as a prefix (see package config).
var hangarPrefix = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9.-]{0,31}$`)

// convertPrefix converts hyper-mcp's tool_name_prefix, which is put before
// tool names as it is ("hi_" makes "hi_greet"), to Hangar's prefix, which
// is joined with "_" ("hi" makes "hi_greet"). comment says what differs,
// if anything; prefix is "" when none can be made.
func convertPrefix(tp string) (prefix, comment string) {
	base, joined := strings.CutSuffix(tp, "_")
	if hangarPrefix.MatchString(base) {
		if joined {
			return base, ""
		}
		return base, fmt.Sprintf("tool_name_prefix %q: Hangar joins its prefix to names with \"_\": tools are named %s_NAME, where hyper-mcp named them %sNAME", tp, base, tp)
	}
	fixed := strings.Trim(regexp.MustCompile(`[^A-Za-z0-9.-]+`).ReplaceAllString(base, "-"), "-.")
	if len(fixed) > 32 {
		fixed = fixed[:32]
	}
	if !hangarPrefix.MatchString(fixed) {
		return "", fmt.Sprintf("tool_name_prefix %q: no Hangar prefix can be made of it (1 to 32 letters, digits, \".\" and \"-\", starting with a letter); not imported", tp)
	}
	return fixed, fmt.Sprintf("tool_name_prefix %q: Hangar prefixes are letters, digits, \".\" and \"-\", joined to names with \"_\": tools are named %s_NAME", tp, fixed)
}

// convertSize converts a hyper-mcp (bytesize) size to Hangar's notation.
func convertSize(s string) (string, string) {
	m := sizeRe.FindStringSubmatch(s)
	if m == nil {
		return "", fmt.Sprintf("%q: not a size Hangar can read (fractions are not supported); not imported", s)
	}
	unit := map[string]string{
		"": "", "b": "B",
		"k": "KB", "kb": "KB", "m": "MB", "mb": "MB", "g": "GB", "gb": "GB",
		"ki": "KiB", "kib": "KiB", "mi": "MiB", "mib": "MiB", "gi": "GiB", "gib": "GiB",
	}[strings.ToLower(m[2])]
	if unit == "" && m[2] != "" {
		return "", fmt.Sprintf("%q: unknown unit; not imported", s)
	}
	out := m[1] + unit
	if _, err := config.ParseSize(out); err != nil {
		return "", fmt.Sprintf("%q: %v; not imported", s, err)
	}
	return out, ""
}

func str(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s} }

func mapping(kv ...string) *yaml.Node {
	n := &yaml.Node{Kind: yaml.MappingNode}
	for i := 0; i+1 < len(kv); i += 2 {
		n.Content = append(n.Content, str(kv[i]), str(kv[i+1]))
	}
	return n
}

func flowList(items []string) *yaml.Node {
	n := &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle}
	for _, s := range items {
		n.Content = append(n.Content, str(s))
	}
	return n
}

func stringList(v any) []string {
	list, ok := v.([]any)
	if !ok {
		return nil
	}
	out := []string{}
	for _, it := range list {
		s, ok := it.(string)
		if !ok {
			return nil
		}
		out = append(out, s)
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
