package docs_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode"

	"gopkg.in/yaml.v3"

	"github.com/hangar-mcp/hangar/internal/cli"
	"github.com/hangar-mcp/hangar/internal/config"
	"github.com/hangar-mcp/hangar/internal/testutil"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testutil.Cleanup()
	os.Exit(code)
}

// markersHelp ends every failure: how to tell the checker what a block is.
const markersHelp = "(markers go on the line just before the block's opening ``` and are described in internal/docs/doc.go: " +
	"<!-- check: fragment --> for a deliberately partial YAML block, <!-- check: skip REASON --> to leave a block unchecked, " +
	"<!-- check: run --> to run a shell block, <!-- check: client-config ARGS --> for a client's JSON, <!-- check: excerpt FILE --> for a copy of a file's lines)"

// Where the output of client-config shows the repository and the directory
// of a document's named yaml blocks.
const (
	docRepo = "/home/me/hangar"
	docHome = "/home/me"
)

// documents returns the Markdown files checked, relative to the
// repository root.
func documents(t *testing.T) []string {
	root := testutil.Root()
	files := []string{"README.md", "RATIONALE.md"}
	for _, pattern := range []string{"docs/*.md", "docs/*/*.md", "examples/*/README.md"} {
		m, err := filepath.Glob(filepath.Join(root, pattern))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range m {
			rel, _ := filepath.Rel(root, f)
			files = append(files, filepath.ToSlash(rel))
		}
	}
	return files
}

// A block is a fenced code block of a document.
type block struct {
	file    string   // relative to the repository root
	line    int      // of the opening fence, 1-based
	lang    string   // first word of the info string, lower case
	body    string   // the lines between the fences, unindented
	markers []string // the "check:" comments just before it, without "check:"
}

func (b *block) where() string { return fmt.Sprintf("%s:%d", b.file, b.line) }

// end is the line of the closing fence.
func (b *block) end() int { return b.bodyLine(strings.Count(b.body, "\n") + 2) }

// bodyLine is the document line of line n (1-based) of the body.
func (b *block) bodyLine(n int) int { return b.line + n }

var markerRE = regexp.MustCompile(`^\s*<!--\s*check:\s*(.*?)\s*-->\s*$`)

// parseBlocks returns the fenced blocks of a document, and problems with
// markers that precede no block.
func parseBlocks(file, text string) ([]*block, []string) {
	lines := strings.Split(text, "\n")
	var blocks []*block
	var problems []string
	var pending []string
	pendingLine := 0
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if m := markerRE.FindStringSubmatch(l); m != nil {
			if len(pending) == 0 {
				pendingLine = i + 1
			}
			pending = append(pending, m[1])
			continue
		}
		trimmed := strings.TrimLeft(l, " ")
		indent := len(l) - len(trimmed)
		fence := ""
		for _, f := range []string{"```", "~~~"} {
			if strings.HasPrefix(trimmed, f) {
				fence = trimmed[:len(trimmed)-len(strings.TrimLeft(trimmed, f[:1]))]
			}
		}
		if fence == "" {
			if len(pending) > 0 {
				problems = append(problems, fmt.Sprintf("%s:%d: a check marker that is not on the line just before a block's opening ``` %s", file, pendingLine, markersHelp))
				pending = nil
			}
			continue
		}
		info := strings.Fields(strings.TrimPrefix(trimmed, fence))
		b := &block{file: file, line: i + 1, markers: pending}
		if len(info) > 0 {
			b.lang = strings.ToLower(info[0])
		}
		pending = nil
		var body []string
		for i++; i < len(lines); i++ {
			t := strings.TrimLeft(lines[i], " ")
			if strings.HasPrefix(t, fence) && strings.TrimSpace(strings.TrimLeft(t, fence[:1])) == "" {
				break
			}
			cut := min(indent, len(lines[i])-len(strings.TrimLeft(lines[i], " ")))
			body = append(body, lines[i][cut:])
		}
		b.body = strings.Join(body, "\n")
		blocks = append(blocks, b)
	}
	return blocks, problems
}

// TestDocs checks every yaml, sh and json block and every relative link of
// the documentation; see the package documentation.
func TestDocs(t *testing.T) {
	root := testutil.Root()
	env := &runEnv{root: root}
	t.Cleanup(env.cleanup)
	for _, file := range documents(t) {
		t.Run(strings.ReplaceAll(file, "/", "_"), func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join(root, file))
			if err != nil {
				t.Fatal(err)
			}
			blocks, problems := parseBlocks(file, string(data))
			for _, p := range problems {
				t.Error(p)
			}
			d := &docCheck{t: t, root: root, file: file, home: t.TempDir(), run: env}
			// Named yaml blocks first: client-config markers may refer to
			// any of them.
			for _, b := range blocks {
				if (b.lang == "yaml" || b.lang == "yml") && blockName(b) != "" {
					d.named = append(d.named, blockName(b))
				}
			}
			for _, b := range blocks {
				d.check(b)
			}
			d.problems = append(d.problems, checkLinks(root, file, string(data))...)
			d.problems = append(d.problems, checkSectionRefs(root, file, string(data))...)
			for _, p := range d.problems {
				t.Error(p)
			}
		})
	}
}

// blockName is the file a yaml block says it is, on its first line: a
// comment whose first word ends in .yaml, .yml or .json ("# team.yaml").
func blockName(b *block) string {
	first, _, _ := strings.Cut(b.body, "\n")
	first, ok := strings.CutPrefix(strings.TrimSpace(first), "#")
	if !ok {
		return ""
	}
	f := strings.Fields(strings.TrimSpace(first))
	if len(f) == 0 {
		return ""
	}
	name := strings.TrimRight(f[0], ",:;")
	if strings.ContainsAny(name, `/\`) {
		return ""
	}
	for _, ext := range []string{".yaml", ".yml", ".json"} {
		if strings.HasSuffix(name, ext) {
			return name
		}
	}
	return ""
}

type docCheck struct {
	t        *testing.T // for temporary directories
	problems []string
	root     string
	file     string
	home     string   // where the named yaml blocks of the file are written
	named    []string // their names
	run      *runEnv
}

func (d *docCheck) fail(format string, args ...any) {
	d.problems = append(d.problems, fmt.Sprintf(format, args...))
}

func (d *docCheck) check(b *block) {
	var kinds []string
	var clientConfigs []string
	for _, m := range b.markers {
		kind, rest, _ := strings.Cut(m, " ")
		switch kind {
		case "fragment", "run", "tokens":
		case "skip":
			if strings.TrimSpace(rest) == "" {
				d.fail("%s: <!-- check: skip --> needs a reason: <!-- check: skip REASON --> %s", b.where(), markersHelp)
			}
		case "client-config":
			clientConfigs = append(clientConfigs, rest)
		case "excerpt":
			d.checkExcerpt(b, strings.TrimSpace(rest))
		default:
			d.fail("%s: unknown check marker %q %s", b.where(), m, markersHelp)
			continue
		}
		kinds = append(kinds, kind)
	}
	if slices.Contains(kinds, "skip") {
		return
	}
	wrong := func(kind string, langs ...string) {
		if slices.Contains(kinds, kind) && !slices.Contains(langs, b.lang) {
			d.fail("%s: <!-- check: %s --> on a %q block; it applies to %s blocks %s", b.where(), kind, b.lang, strings.Join(langs, ", "), markersHelp)
		}
	}
	wrong("fragment", "yaml", "yml")
	wrong("tokens", "yaml", "yml")
	wrong("run", "sh", "shell", "bash")
	wrong("client-config", "json")
	switch b.lang {
	case "yaml", "yml":
		if slices.Contains(kinds, "tokens") {
			d.checkTokens(b)
			return
		}
		if slices.Contains(kinds, "fragment") {
			var v any
			if err := yaml.Unmarshal([]byte(b.body), &v); err != nil {
				d.fail("%s: yaml fragment is not valid YAML: %v %s", b.where(), err, markersHelp)
			}
			return
		}
		d.checkConfig(b)
	case "sh", "shell", "bash", "console":
		d.checkShell(b, slices.Contains(kinds, "run"))
	case "json":
		if !json.Valid([]byte(b.body)) {
			d.fail("%s: json block is not valid JSON %s", b.where(), markersHelp)
			return
		}
		for _, args := range clientConfigs {
			d.checkClientConfig(b, args)
		}
	}
}

// checkExcerpt checks that a block's lines appear, together and in order,
// in a file of the repository.
func (d *docCheck) checkExcerpt(b *block, rel string) {
	data, err := os.ReadFile(filepath.Join(d.root, rel))
	if err != nil {
		d.fail("%s: <!-- check: excerpt %s -->: %v %s", b.where(), rel, err, markersHelp)
		return
	}
	if !strings.Contains(string(data), strings.TrimRight(b.body, "\n")+"\n") {
		d.fail("%s: the block is marked as an excerpt of %s, which does not hold its lines together and in order; copy them again from %s %s", b.where(), rel, rel, markersHelp)
	}
}

// checkConfig loads a yaml block as a Hangar configuration.
func (d *docCheck) checkConfig(b *block) {
	t := d.t
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(b.body), &doc); err != nil {
		d.fail("%s: yaml block (lines %d-%d) is not valid YAML: %v\nIf it is not a Hangar configuration, mark it %s",
			b.where(), b.line, b.end(), err, markersHelp)
		return
	}
	// A named block lives in the file's home (client-config may serve
	// it); others in a directory of their own, deep enough that ../ stays
	// inside the temporary directory.
	tmp := t.TempDir()
	base := filepath.Join(tmp, "a", "b", "c")
	name := blockName(b)
	if name != "" {
		base = d.home
	}
	text := b.body
	var refs []fileRef
	if useFileRefs {
		refs = fileRefs(&doc)
	}
	for _, ref := range refs {
		p := ref.path
		if filepath.IsAbs(p) {
			mapped := filepath.Join(tmp, "abs", p)
			text = strings.ReplaceAll(text, p, mapped)
			p = mapped
		} else {
			p = filepath.Join(base, p)
		}
		if ref.data != nil {
			os.MkdirAll(filepath.Dir(p), 0o755)
			os.WriteFile(p, ref.data, 0o600)
		} else {
			createRef(p, ref.dir)
		}
	}
	os.MkdirAll(base, 0o755)
	tokensEnv := tokensVariable(&doc)
	getenv := func(name string) (string, bool) {
		if name == tokensEnv { // IDs must differ from the file's
			return strings.Replace(standInTokens, "id: docs", "id: docs-env", 1), true
		}
		return "value-of-" + name, true
	}
	_, err := config.Parse([]byte(text), "", base, getenv)
	// Files under keys fileRefs does not know (added since) are created
	// as the loader reports them missing, directories where it wants one.
	for range 20 {
		fixed := false
		for _, e := range unwrapAll(err) {
			ce, ok := e.(*config.Error)
			if !ok {
				continue
			}
			if m := missingRE.FindStringSubmatch(ce.Msg); m != nil {
				p := m[2]
				if !strings.HasPrefix(p, tmp) {
					mapped := filepath.Join(tmp, "abs", p)
					text = strings.ReplaceAll(text, p, mapped)
					p = mapped
				}
				if _, err := os.Stat(p); err != nil {
					createRef(p, false)
					fixed = true
				}
			} else if m := notDirRE.FindStringSubmatch(ce.Msg); m != nil && strings.HasPrefix(m[2], tmp) {
				os.Remove(m[2])
				createRef(m[2], true)
				fixed = true
			}
		}
		if !fixed {
			break
		}
		_, err = config.Parse([]byte(text), "", base, getenv)
	}
	if err != nil {
		var lines []string
		for _, e := range unwrapAll(err) {
			if ce, ok := e.(*config.Error); ok && ce.Line > 0 {
				lines = append(lines, fmt.Sprintf("\t%s:%d:%d: %s", b.file, b.bodyLine(ce.Line), ce.Column, ce.Msg))
			} else {
				lines = append(lines, "\t"+e.Error())
			}
		}
		d.fail("%s: yaml block (lines %d-%d) is not a valid Hangar configuration:\n%s\nIf the block is deliberately partial, mark it; %s",
			b.where(), b.line, b.end(), strings.Join(lines, "\n"), markersHelp)
		return
	}
	if name != "" {
		if err := os.WriteFile(filepath.Join(d.home, name), []byte(b.body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// What the loader says of a file or directory that is missing, or that is
// not a directory: "WRITTEN (resolved to ABS) does not exist", or "ABS does
// not exist" when it was written absolute.
var (
	missingRE = regexp.MustCompile(`: (?:(\S+) \(resolved to )?(/[^ )]+)\)? does not exist$`)
	notDirRE  = regexp.MustCompile(`: (?:(\S+) \(resolved to )?(/[^ )]+)\)? is not a directory$`)
)

func unwrapAll(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// useFileRefs is false only in the test of checkConfig's fallback.
var useFileRefs = true

// fileRef is a file or directory a configuration refers to.
type fileRef struct {
	path string
	dir  bool
	data []byte // the stand-in's content; nil: a WebAssembly header
}

// standInTokens is a valid file of static tokens, the stand-in for a
// tokens_file or tokens_env that a configuration block names.
const standInTokens = "- id: docs\n  token: 0123456789abcdef0123456789abcdef\n  plugins: [\"*\"]\n"

// checkTokens checks a block holding a file of static tokens, as a
// configuration's http.auth.tokens_file.
func (d *docCheck) checkTokens(b *block) {
	dir := d.t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "tokens.yaml"), []byte(b.body), 0o600); err != nil {
		d.t.Fatal(err)
	}
	cfg := "http:\n  auth:\n    tokens_file: tokens.yaml\nplugins: []\n"
	if _, err := config.Parse([]byte(cfg), "", dir, func(string) (string, bool) { return "", false }); err != nil {
		var lines []string
		for _, e := range unwrapAll(err) {
			if ce, ok := e.(*config.Error); ok && ce.Line > 0 && strings.HasSuffix(ce.File, "tokens.yaml") {
				lines = append(lines, fmt.Sprintf("\t%s:%d:%d: %s", b.file, b.bodyLine(ce.Line), ce.Column, ce.Msg))
			} else {
				lines = append(lines, "\t"+e.Error())
			}
		}
		d.fail("%s: yaml block (lines %d-%d) is not a valid file of tokens:\n%s %s",
			b.where(), b.line, b.end(), strings.Join(lines, "\n"), markersHelp)
	}
}

// fileRefs finds the files and directories a configuration refers to.
// standInStateKey stands for the state key file a block names
// (mrtr.state_key_file): 32 bytes in hex.
const standInStateKey = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f\n"

func fileRefs(doc *yaml.Node) []fileRef {
	var refs []fileRef
	value := func(m *yaml.Node, key string) *yaml.Node {
		if m == nil || m.Kind != yaml.MappingNode {
			return nil
		}
		for i := 0; i+1 < len(m.Content); i += 2 {
			if m.Content[i].Value == key {
				return m.Content[i+1]
			}
		}
		return nil
	}
	scalar := func(n *yaml.Node) string {
		if n != nil && n.Kind == yaml.ScalarNode {
			return n.Value
		}
		return ""
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return nil
	}
	if s := scalar(value(value(value(doc.Content[0], "http"), "auth"), "tokens_file")); s != "" {
		refs = append(refs, fileRef{path: s, data: []byte(standInTokens)})
	}
	if m := value(doc.Content[0], "mrtr"); m != nil {
		if s := scalar(value(m, "state_key_file")); s != "" {
			refs = append(refs, fileRef{path: s, data: []byte(standInStateKey)})
		}
		if l := value(m, "previous_state_key_files"); l != nil && l.Kind == yaml.SequenceNode {
			for _, it := range l.Content {
				if s := scalar(it); s != "" {
					refs = append(refs, fileRef{path: s, data: []byte(standInStateKey)})
				}
			}
		}
	}
	plugins := value(doc.Content[0], "plugins")
	if plugins == nil || plugins.Kind != yaml.SequenceNode {
		return refs
	}
	for _, p := range plugins.Content {
		for _, key := range []string{"path", "source"} {
			s := scalar(value(p, key))
			switch {
			case strings.HasPrefix(s, "file://localhost/"):
				refs = append(refs, fileRef{path: strings.TrimPrefix(s, "file://localhost")})
			case strings.HasPrefix(s, "file://"):
				refs = append(refs, fileRef{path: strings.TrimPrefix(s, "file://")})
			case s != "" && !strings.Contains(s, "://"):
				refs = append(refs, fileRef{path: s})
			}
		}
		v := value(p, "verify")
		for _, key := range []string{"key", "trusted_root"} {
			if s := scalar(value(v, key)); s != "" {
				refs = append(refs, fileRef{path: s})
			}
		}
		if paths := value(value(p, "grants"), "allowed_paths"); paths != nil {
			for _, m := range paths.Content {
				if s := scalar(value(m, "host")); s != "" {
					refs = append(refs, fileRef{path: s, dir: true})
				}
			}
		}
	}
	return refs
}

// tokensVariable returns the variable a configuration's
// http.auth.tokens_env names, or "".
func tokensVariable(doc *yaml.Node) string {
	n := doc
	if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	for _, key := range []string{"http", "auth", "tokens_env"} {
		if n == nil || n.Kind != yaml.MappingNode {
			return ""
		}
		var next *yaml.Node
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == key {
				next = n.Content[i+1]
			}
		}
		n = next
	}
	if n != nil && n.Kind == yaml.ScalarNode {
		return n.Value
	}
	return ""
}

// checkShell parses every hangar command of a shell block against the
// real command line, and runs the block if it is marked run.
func (d *docCheck) checkShell(b *block, run bool) {
	t := d.t
	cmds, err := shellCommands(b.body)
	if err != nil {
		d.fail("%s: shell block: %v %s", b.where(), err, markersHelp)
		return
	}
	for _, c := range cmds {
		args, ok := hangarArgs(c.words)
		if !ok {
			continue
		}
		if err := cli.CheckArgs(args); err != nil {
			d.fail("%s:%d: %q: %v\n(run \"hangar help\" for the commands and their flags) %s", b.file, b.bodyLine(c.line), strings.Join(c.words, " "), err, markersHelp)
		}
	}
	if run {
		if strings.Contains(b.body, "\n$ ") || strings.HasPrefix(b.body, "$ ") {
			d.fail("%s: a block marked run has \"$ \" prompts; write the commands alone %s", b.where(), markersHelp)
			return
		}
		if err := d.run.exec(t, b); err != nil {
			d.fail("%v", err)
		}
	}
}

// hangarArgs returns the arguments of a hangar command line, if words is
// one: hangar, ./hangar, any path ending in /hangar, or go run ./cmd/hangar.
func hangarArgs(words []string) ([]string, bool) {
	for len(words) > 0 && isAssignment(words[0]) {
		words = words[1:]
	}
	switch {
	case len(words) == 0:
		return nil, false
	case words[0] == "hangar" || strings.HasSuffix(words[0], "/hangar"):
		return words[1:], true
	case len(words) >= 3 && words[0] == "go" && words[1] == "run" && (words[2] == "./cmd/hangar" || strings.HasSuffix(words[2], "/cmd/hangar")):
		return words[3:], true
	}
	return nil, false
}

func isAssignment(w string) bool {
	name, _, ok := strings.Cut(w, "=")
	return ok && name != "" && !strings.ContainsFunc(name, func(r rune) bool {
		return !(r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r))
	})
}

// A shellCommand is one simple command of a shell block.
type shellCommand struct {
	line  int // in the body, 1-based
	words []string
}

// shellCommands splits a shell block into simple commands: quotes and
// escapes are resolved, comments dropped, lines continued with \ joined,
// commands split at | || && ; &, redirections left out. In a block with
// "$ " prompts only the prompt lines (and their continuations) are read.
func shellCommands(body string) ([]shellCommand, error) {
	lines := strings.Split(body, "\n")
	prompts := false
	for _, l := range lines {
		if strings.HasPrefix(l, "$ ") {
			prompts = true
		}
	}
	var cmds []shellCommand
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		start := i + 1
		if prompts {
			var ok bool
			if l, ok = strings.CutPrefix(l, "$ "); !ok {
				continue
			}
		}
		for strings.HasSuffix(l, `\`) && i+1 < len(lines) {
			i++
			l = strings.TrimSuffix(l, `\`) + " " + lines[i]
		}
		words, err := shellWords(l)
		if err != nil {
			return nil, fmt.Errorf("line %d: %v", start, err)
		}
		for _, w := range words {
			cmds = append(cmds, shellCommand{line: start, words: w})
		}
	}
	return cmds, nil
}

// shellWords splits one line into simple commands of words.
func shellWords(l string) ([][]string, error) {
	var cmds [][]string
	var cur []string
	var w strings.Builder
	inWord, skipNext := false, false
	endWord := func() {
		if inWord {
			if skipNext {
				skipNext = false
			} else {
				cur = append(cur, w.String())
			}
		}
		w.Reset()
		inWord = false
	}
	endCmd := func() {
		endWord()
		if len(cur) > 0 {
			cmds = append(cmds, cur)
		}
		cur = nil
	}
	for i := 0; i < len(l); i++ {
		c := l[i]
		switch {
		case c == ' ' || c == '\t':
			endWord()
		case c == '#' && !inWord:
			endCmd()
			return cmds, nil
		case c == '\\' && i+1 < len(l):
			w.WriteByte(l[i+1])
			inWord = true
			i++
		case c == '\'':
			j := strings.IndexByte(l[i+1:], '\'')
			if j < 0 {
				return nil, fmt.Errorf("unterminated ' quote")
			}
			w.WriteString(l[i+1 : i+1+j])
			inWord = true
			i += j + 1
		case c == '"':
			j := i + 1
			for ; j < len(l) && l[j] != '"'; j++ {
				if l[j] == '\\' && j+1 < len(l) {
					j++
					w.WriteByte(l[j])
					continue
				}
				w.WriteByte(l[j])
			}
			if j >= len(l) {
				return nil, fmt.Errorf(`unterminated " quote`)
			}
			inWord = true
			i = j
		case c == '|' || c == ';' || c == '&':
			if c == '&' && i > 0 && l[i-1] == '>' {
				w.WriteByte(c) // 2>&1
				continue
			}
			endCmd()
			if i+1 < len(l) && (l[i+1] == '|' || l[i+1] == '&') {
				i++
			}
		case c == '>' || c == '<':
			// A redirection: its operand is not an argument. 2>&1 and
			// >file are one word; "> file" makes the next word its operand.
			digits := w.String()
			if inWord && strings.Trim(digits, "0123456789") != "" {
				endWord()
			} else {
				w.Reset()
				inWord = false
			}
			j := i + 1
			for j < len(l) && (l[j] == '>' || l[j] == '&') {
				j++
			}
			if j < len(l) && l[j] != ' ' && l[j] != '\t' {
				for j < len(l) && l[j] != ' ' && l[j] != '\t' {
					j++
				}
			} else {
				skipNext = true
			}
			i = j - 1
		default:
			w.WriteByte(c)
			inWord = true
		}
	}
	endCmd()
	return cmds, nil
}

// checkClientConfig compares a json block with the output of client-config.
func (d *docCheck) checkClientConfig(b *block, marker string) {
	t := d.t
	args := strings.Fields(marker)
	if !slices.ContainsFunc(args, func(a string) bool { return a == "--command" || strings.HasPrefix(a, "--command=") }) {
		d.fail("%s: <!-- check: client-config %s --> must give --command (the checker cannot name the installed binary) %s", b.where(), marker, markersHelp)
		return
	}
	// A configuration of the repository is copied to a directory standing
	// for it, beside stand-ins for the files it names (the examples need
	// not be built).
	repo := d.t.TempDir()
	for i, a := range args {
		if a == "--config" && i+1 < len(args) {
			if slices.Contains(d.named, args[i+1]) {
				args[i+1] = filepath.Join(d.home, args[i+1])
				continue
			}
			path, err := d.mirror(repo, args[i+1])
			if err != nil {
				d.fail("%s: <!-- check: client-config %s -->: %v %s", b.where(), marker, err, markersHelp)
				return
			}
			args[i+1] = path
		}
	}
	args = append([]string{"client-config"}, append(args, "--placeholders")...)
	var out, errOut bytes.Buffer
	if code := cli.Main(context.Background(), args, &cli.Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errOut}); code != 0 {
		d.fail("%s: hangar %s: exit %d\n%s%s", b.where(), strings.Join(args, " "), code, out.String(), errOut.String())
		return
	}
	printed := strings.ReplaceAll(out.String(), jsonString(repo), jsonString(docRepo))
	printed = strings.ReplaceAll(printed, jsonString(d.home), jsonString(docHome))
	var got, want any
	if err := json.Unmarshal([]byte(printed), &got); err != nil {
		t.Fatal(err)
	}
	json.Unmarshal([]byte(b.body), &want)
	if !reflect.DeepEqual(got, want) {
		d.fail("%s: json block differs from what \"hangar client-config %s\" prints (the repository root shown as %s):\n%s\nUpdate the block %s",
			b.where(), marker, docRepo, printed, markersHelp)
	}
}

// mirror copies the configuration file rel of the repository to the same
// place under dir, creating the files and directories it names, and
// returns the copy's path.
func (d *docCheck) mirror(dir, rel string) (string, error) {
	data, err := os.ReadFile(filepath.Join(d.root, rel))
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, rel)
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return "", err
	}
	for _, ref := range fileRefs(&doc) {
		if !filepath.IsAbs(ref.path) {
			createRef(filepath.Join(filepath.Dir(path), ref.path), ref.dir)
		}
	}
	os.MkdirAll(filepath.Dir(path), 0o755)
	return path, os.WriteFile(path, data, 0o644)
}

// createRef creates a stand-in for a file (a WebAssembly header) or a
// directory a configuration names, unless it exists.
func createRef(path string, dir bool) {
	if dir {
		os.MkdirAll(path, 0o755)
	} else if _, err := os.Stat(path); err != nil {
		os.MkdirAll(filepath.Dir(path), 0o755)
		os.WriteFile(path, []byte("\x00asm\x01\x00\x00\x00"), 0o644)
	}
}

// jsonString is s as it appears inside a JSON string, without the quotes.
func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b[1 : len(b)-1])
}

// runEnv is the directory blocks marked run execute in, built once.
type runEnv struct {
	root string
	once sync.Once
	dir  string
	err  error
}

func (e *runEnv) setup(t *testing.T) {
	dir, err := os.MkdirTemp("", "hangar-docs-run-")
	if err != nil {
		e.err = err
		return
	}
	e.dir = dir
	bin := filepath.Join(dir, "bin")
	os.MkdirAll(bin, 0o755)
	build := exec.Command("go", "build", "-o", filepath.Join(bin, "hangar"), "./cmd/hangar")
	build.Dir = e.root
	if out, err := build.CombinedOutput(); err != nil {
		e.err = fmt.Errorf("building hangar: %v\n%s", err, out)
		return
	}
	for _, name := range []string{"hello", "notes"} {
		wasm, err := os.ReadFile(testutil.BuildPlugin(t, "./examples/"+name))
		if err != nil {
			e.err = err
			return
		}
		os.MkdirAll(filepath.Join(dir, "examples", name), 0o755)
		if err := os.WriteFile(filepath.Join(dir, "examples", name, name+".wasm"), wasm, 0o644); err != nil {
			e.err = err
			return
		}
	}
	cfg, err := os.ReadFile(filepath.Join(e.root, "examples", "hangar.yaml"))
	if err == nil {
		err = os.WriteFile(filepath.Join(dir, "examples", "hangar.yaml"), cfg, 0o644)
	}
	e.err = err
}

func (e *runEnv) cleanup() {
	if e.dir != "" {
		os.RemoveAll(e.dir)
	}
}

// exec runs a block in a copy of the run directory's layout.
func (e *runEnv) exec(t *testing.T, b *block) error {
	e.once.Do(func() { e.setup(t) })
	if e.err != nil {
		t.Fatalf("preparing to run %s: %v", b.where(), e.err)
	}
	work := t.TempDir()
	if err := os.CopyFS(filepath.Join(work, "examples"), os.DirFS(filepath.Join(e.dir, "examples"))); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(e.dir, "bin", "hangar"), filepath.Join(work, "hangar")); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", b.body)
	cmd.Dir = work
	cmd.Env = append(os.Environ(),
		"PATH="+filepath.Join(e.dir, "bin")+string(os.PathListSeparator)+os.Getenv("PATH"),
		"HOME="+filepath.Join(e.dir, "home"),
		"XDG_CACHE_HOME="+filepath.Join(e.dir, "cache"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: block marked run failed: %v\n%s\n(it runs in a directory holding ./hangar and examples/; see internal/docs/doc.go) %s", b.where(), err, out, markersHelp)
	}
	return nil
}

// checkLinks checks the relative links of a document.
func checkLinks(root, file, text string) []string {
	var problems []string
	linkRE := regexp.MustCompile(`\[[^\]]*\]\(([^)\s]+)\)`)
	inCode := false
	for i, l := range strings.Split(text, "\n") {
		if t := strings.TrimSpace(l); strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~") {
			inCode = !inCode
			continue
		}
		if inCode {
			continue
		}
		l = regexp.MustCompile("`[^`]*`").ReplaceAllString(l, "")
		for _, m := range linkRE.FindAllStringSubmatch(l, -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			path, anchor, _ := strings.Cut(target, "#")
			dest := filepath.Join(root, filepath.Dir(file), path)
			if path == "" {
				dest = filepath.Join(root, file)
			}
			if _, err := os.Stat(dest); err != nil {
				problems = append(problems, fmt.Sprintf("%s:%d: link to %s: %s does not exist", file, i+1, target, path))
				continue
			}
			if anchor == "" || !strings.HasSuffix(dest, ".md") {
				continue
			}
			data, err := os.ReadFile(dest)
			if err != nil {
				problems = append(problems, fmt.Sprintf("%s:%d: link to %s: %v", file, i+1, target, err))
				continue
			}
			if !slices.Contains(anchors(string(data)), anchor) {
				problems = append(problems, fmt.Sprintf("%s:%d: link to %s: %s has no heading with the anchor #%s (anchors: %s)", file, i+1, target, path, anchor, strings.Join(anchors(string(data)), " ")))
			}
		}
	}
	return problems
}

// Prose references to sections of another document: the README's
// "Instances and state", see the README, "Network", the sandbox section of
// the README. Sections move (most of the README's went to docs/), and
// nothing but a link is checked, so a reference must be a link (whose
// anchor checkLinks checks) or name a heading that exists, in quotes.
var (
	// `README's "Section"`, `README, "Section"`, `README section "Section"`
	quotedSectionRE = regexp.MustCompile(`\b((?:[\w-]+/)*[\w.-]+\.md|README|RATIONALE)(?:'s|,| section) "([^"]+)"`)
	// `README's Section` (a capital letter, not quoted) and `the ... section of the README`
	unquotedSectionRE = regexp.MustCompile(`\b(?:README|RATIONALE)'s (?:[A-Z][\w-]*)|\bsections? of the (?:README|RATIONALE)\b`)
)

// checkSectionRefs checks the prose references of a document to sections
// of the README (and RATIONALE.md, and other .md files by name).
func checkSectionRefs(root, file, text string) []string {
	var problems []string
	inCode := false
	for i, l := range strings.Split(text, "\n") {
		if t := strings.TrimSpace(l); strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~") {
			inCode = !inCode
			continue
		}
		if inCode {
			continue
		}
		l = regexp.MustCompile("`[^`]*`").ReplaceAllString(l, "")
		l = regexp.MustCompile(`\[([^\]]*)\]\([^)\s]+\)`).ReplaceAllString(l, "$1") // links are checkLinks'
		for _, m := range quotedSectionRE.FindAllStringSubmatch(l, -1) {
			doc := m[1]
			switch doc {
			case "README":
				doc = "README.md"
			case "RATIONALE":
				doc = "RATIONALE.md"
			}
			path := filepath.Join(root, filepath.Dir(file), doc)
			if doc == "README.md" || doc == "RATIONALE.md" {
				path = filepath.Join(root, doc)
			}
			data, err := os.ReadFile(path)
			if err != nil {
				problems = append(problems, fmt.Sprintf("%s:%d: reference to %s %q: %v", file, i+1, m[1], m[2], err))
				continue
			}
			if !slices.Contains(headings(string(data)), strings.ToLower(m[2])) {
				problems = append(problems, fmt.Sprintf("%s:%d: reference to the section %q of %s, which has no such heading (link to where it is now)", file, i+1, m[2], doc))
			}
		}
		if m := unquotedSectionRE.FindString(l); m != "" && !quotedSectionRE.MatchString(l) {
			problems = append(problems, fmt.Sprintf("%s:%d: %q refers to a section by a name the checker cannot check: link to it ([text](FILE.md#anchor)) or quote its heading", file, i+1, m))
		}
	}
	return problems
}

// headings returns the text of a document's headings, lower case, without
// Markdown code marks.
func headings(text string) []string {
	var out []string
	inCode := false
	for _, l := range strings.Split(text, "\n") {
		if t := strings.TrimSpace(l); strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~") {
			inCode = !inCode
			continue
		}
		if inCode || !strings.HasPrefix(l, "#") {
			continue
		}
		out = append(out, strings.ToLower(strings.ReplaceAll(strings.TrimSpace(strings.TrimLeft(l, "#")), "`", "")))
	}
	return out
}

// anchors returns the anchors GitHub gives the headings of a document.
func anchors(text string) []string {
	var out []string
	seen := map[string]int{}
	inCode := false
	for _, l := range strings.Split(text, "\n") {
		if t := strings.TrimSpace(l); strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~") {
			inCode = !inCode
			continue
		}
		if inCode || !strings.HasPrefix(l, "#") {
			continue
		}
		h := strings.TrimSpace(strings.TrimLeft(l, "#"))
		var b strings.Builder
		for _, r := range strings.ToLower(h) {
			switch {
			case r == ' ':
				b.WriteByte('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				b.WriteRune(r)
			}
		}
		a := b.String()
		if n := seen[a]; n > 0 {
			out = append(out, fmt.Sprintf("%s-%d", a, n))
		} else {
			out = append(out, a)
		}
		seen[a]++
	}
	return out
}
