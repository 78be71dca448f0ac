package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// Bounds on a configuration file, so that a hostile or mistaken file costs
// little to refuse: its size, and the nodes its aliases (*name) add when
// expanded (a "billion laughs" file is a few hundred bytes of aliases of
// aliases).
const (
	// MaxFileSize is the largest configuration file Load and Parse accept.
	MaxFileSize = 1 << 20
	// maxAliasNodes bounds the nodes reached through aliases, beyond the
	// nodes written in the file.
	maxAliasNodes = 100_000
)

// readFile reads a configuration file: a regular file of at most
// MaxFileSize bytes. It opens without blocking and checks the open file,
// so a FIFO or a device such as /dev/zero is refused, not read.
func readFile(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|oNonblock, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, &fs.PathError{Op: "read", Path: path, Err: fmt.Errorf("not a regular file (%s)", fi.Mode().Type())}
	}
	if fi.Size() > MaxFileSize {
		return nil, &fs.PathError{Op: "read", Path: path, Err: fmt.Errorf("%d bytes; a configuration file may have at most %d", fi.Size(), MaxFileSize)}
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, err
	}
	if len(b) > MaxFileSize {
		return nil, &fs.PathError{Op: "read", Path: path, Err: fmt.Errorf("more than %d bytes; a configuration file may have at most %d", MaxFileSize, MaxFileSize)}
	}
	return b, nil
}

// checkAliases reports a document whose aliases expand to more than
// maxAliasNodes nodes beyond those written, without expanding them: each
// node's expanded size is computed once.
func (d *decoder) checkAliases(doc *yaml.Node) bool {
	written := 0
	memo := map[*yaml.Node]int{}
	var size func(n *yaml.Node, depth int) int
	size = func(n *yaml.Node, depth int) int {
		if n == nil || depth > 1000 {
			return 1
		}
		if n.Kind == yaml.AliasNode {
			return size(n.Alias, depth+1)
		}
		if v, ok := memo[n]; ok {
			return v
		}
		memo[n] = 1 // a node containing itself counts once
		total := 1
		for _, c := range n.Content {
			total += size(c, depth+1)
			if total > 1<<40 {
				total = 1 << 40
			}
		}
		memo[n] = total
		return total
	}
	var count func(n *yaml.Node)
	count = func(n *yaml.Node) {
		if n == nil || n.Kind == yaml.AliasNode {
			return
		}
		written++
		for _, c := range n.Content {
			count(c)
		}
	}
	count(doc)
	if expanded := size(doc, 0); expanded-written > maxAliasNodes {
		d.errorf(nil, "", "the file's aliases (*name) expand to %d values, more than the limit of %d beyond the %d written; write the values out, or use fewer aliases of aliases",
			expanded, maxAliasNodes, written)
		return false
	}
	return true
}

// decoder walks a yaml.Node tree against the schema, collecting every
// problem instead of stopping at the first.
type decoder struct {
	file    string
	baseDir string
	getenv  func(string) (string, bool)
	errs    []*Error

	// Where mrtr.forward_timeout and each plugin's limits.call_timeout
	// were given (nil, absent: the default), for checkForwardTimeout.
	forwardTimeoutAt *yaml.Node
	callTimeoutAt    map[string]*yaml.Node // by the value's path
}

// errorf records a problem at n (nil: position unknown). path is the YAML
// path of the value concerned, such as "plugins[0].limits"; "" for the top.
func (d *decoder) errorf(n *yaml.Node, path, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if path != "" {
		msg = path + ": " + msg
	}
	e := &Error{File: d.file, Msg: msg}
	if n != nil {
		e.Line, e.Column = n.Line, n.Column
	}
	d.errs = append(d.errs, e)
}

// err returns the recorded problems, sorted by position, as one error.
func (d *decoder) err() error {
	if len(d.errs) == 0 {
		return nil
	}
	slices.SortStableFunc(d.errs, func(a, b *Error) int {
		if a.Line != b.Line {
			return a.Line - b.Line
		}
		return a.Column - b.Column
	})
	errs := make([]error, len(d.errs))
	for i, e := range d.errs {
		errs[i] = e
	}
	return errors.Join(errs...)
}

// decode parses data and returns the configuration; check d.err after.
func (d *decoder) decode(data []byte) *Config {
	cfg := Default()
	root := d.document(data)
	if root == nil {
		return cfg
	}
	if root.Kind != yaml.MappingNode {
		d.errorf(root, "", "the top level must be a mapping with the keys http, metrics, tracing, deployment, mrtr, tasks and plugins, got %s", describe(root))
		return cfg
	}
	f := d.mapping(root, "", []string{"http", "metrics", "tracing", "deployment", "mrtr", "tasks", "plugins"}, rootHints)
	if e, ok := f["http"]; ok {
		cfg.HTTP = d.http(e.val, "http")
	}
	if e, ok := f["metrics"]; ok {
		cfg.Metrics = d.metrics(e.val, "metrics")
	}
	if e, ok := f["tracing"]; ok {
		cfg.Tracing = d.tracing(e.val, "tracing")
	}
	if e, ok := f["deployment"]; ok {
		cfg.Deployment = d.deployment(e.val, "deployment")
	}
	if e, ok := f["mrtr"]; ok {
		cfg.MRTR = d.mrtr(e.val, "mrtr")
	}
	if e, ok := f["tasks"]; ok {
		cfg.Tasks = d.tasks(e.val, "tasks")
	}
	if e, ok := f["plugins"]; ok {
		cfg.Plugins = d.plugins(e.val, "plugins")
	}
	d.checkForwardTimeout(cfg)
	return cfg
}

// checkForwardTimeout refuses a forward_timeout shorter than a plugin's
// call_timeout when retries are forwarded: the replica holding a call
// answers a forwarded retry once the call ends or asks again, which may
// take the plugin's whole call_timeout, and a forward cut before that
// tells its client the replica is gone while the call runs on there.
func (d *decoder) checkForwardTimeout(cfg *Config) {
	m := cfg.MRTR
	if m.PeerURL == "" && len(m.Peers) == 0 {
		return
	}
	longest := -1
	for i, pl := range cfg.Plugins {
		if pl.Limits.CallTimeout <= m.ForwardTimeout {
			continue
		}
		if d.forwardTimeoutAt == nil {
			path := fmt.Sprintf("plugins[%d].limits.call_timeout", i)
			d.errorf(d.callTimeoutAt[path], path, "%s is longer than mrtr.forward_timeout (%s, its default): a retry forwarded to the replica holding one of this plugin's calls would be cut before the call could end; set mrtr.forward_timeout above %s, or shorten call_timeout",
				pl.Limits.CallTimeout, m.ForwardTimeout, pl.Limits.CallTimeout)
			continue
		}
		if longest < 0 || pl.Limits.CallTimeout > cfg.Plugins[longest].Limits.CallTimeout {
			longest = i
		}
	}
	if longest >= 0 {
		pl := cfg.Plugins[longest]
		d.errorf(resolve(d.forwardTimeoutAt), "mrtr.forward_timeout", "%s is shorter than plugin %q's call_timeout (%s): a retry forwarded to the replica holding one of its calls would be cut before the call could end; set it above %s",
			m.ForwardTimeout, pl.Name, pl.Limits.CallTimeout, pl.Limits.CallTimeout)
	}
}

// document parses data as one YAML document and returns its root node, or
// nil when the document is empty or cannot be read (the problems are
// recorded).
func (d *decoder) document(data []byte) *yaml.Node {
	if bytes.HasPrefix(data, []byte("\x00asm")) {
		d.errorf(nil, "", "this is a WebAssembly module, not a configuration file")
		return nil
	}
	if len(data) > MaxFileSize {
		d.errorf(nil, "", "the file has %d bytes; a configuration file may have at most %d", len(data), MaxFileSize)
		return nil
	}
	if !d.checkText(data) {
		return nil
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if err != io.EOF { // io.EOF: empty, or only comments
			d.syntaxError(data, err)
		}
		return nil
	}
	var extra yaml.Node
	switch err := dec.Decode(&extra); {
	case err == nil:
		d.errorf(&extra, "", "a configuration file holds one YAML document; remove the second document and its \"---\" separator")
	case err != io.EOF:
		d.syntaxError(data, err)
	}
	if len(doc.Content) == 0 || !d.checkAliases(&doc) {
		return nil
	}
	root := resolve(doc.Content[0])
	if isNull(root) {
		return nil
	}
	return root
}

// checkText reports the first byte sequence the YAML reader would refuse,
// with its position, which yaml.v3 itself does not give.
func (d *decoder) checkText(data []byte) bool {
	line, col := 1, 0
	for i := 0; i < len(data); {
		r, size := utf8.DecodeRune(data[i:])
		col++
		switch {
		case r == utf8.RuneError && size <= 1:
			d.errs = append(d.errs, &Error{File: d.file, Line: line, Column: col,
				Msg: "invalid UTF-8; a configuration file must be UTF-8 text"})
			return false
		case r == '\t', r == '\r', r == 0x85,
			r >= 0x20 && r <= 0x7E,
			r >= 0xA0 && r <= 0xD7FF,
			r >= 0xE000 && r <= 0xFFFD,
			r >= 0x10000 && r <= 0x10FFFF:
		case r == '\n':
			line, col = line+1, 0
		default:
			d.errs = append(d.errs, &Error{File: d.file, Line: line, Column: col,
				Msg: fmt.Sprintf("control character %U is not allowed; write it as an escape in a double-quoted string", r)})
			return false
		}
		i += size
	}
	return true
}

var yamlLineRe = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// yamlParserProblems are the problems yaml.v3 reports from its parser, as
// opposed to its scanner. yaml.v3 v3.0.1 numbers parser errors from 0 and
// scanner errors from 1; see syntaxError.
var yamlParserProblems = map[string]bool{
	"did not find expected ',' or ']'":       true,
	"did not find expected ',' or '}'":       true,
	"did not find expected '-' indicator":    true,
	"did not find expected <document start>": true,
	"did not find expected <stream-start>":   true,
	"did not find expected key":              true,
	"did not find expected node content":     true,
	"found duplicate %TAG directive":         true,
	"found duplicate %YAML directive":        true,
	"found incompatible YAML document":       true,
	"found undefined tag handle":             true,
}

// syntaxError records a yaml.v3 parse error. Those carry a line but no
// column. yaml.v3 omits the line when its 0-based counter is 0, and adds 1
// to it only for scanner errors; this undoes both quirks.
func (d *decoder) syntaxError(data []byte, err error) {
	e := &Error{File: d.file, Line: 1}
	msg := err.Error()
	if m := yamlLineRe.FindStringSubmatch(msg); m != nil {
		e.Line, _ = strconv.Atoi(m[1])
		msg = m[2]
		if yamlParserProblems[msg] {
			e.Line++
		}
	} else {
		msg = strings.TrimPrefix(msg, "yaml: ")
		if m := unknownAnchorRe.FindStringSubmatch(msg); m != nil {
			// Reported without a position; find the alias.
			e.Line, e.Column = findAlias(data, m[1])
			msg = fmt.Sprintf("alias *%s refers to no anchor &%s defined before it", m[1], m[1])
		}
	}
	e.Msg = "syntax error: " + msg
	d.errs = append(d.errs, e)
}

var unknownAnchorRe = regexp.MustCompile(`^unknown anchor '(.*)' referenced$`)

// findAlias returns the position of the first "*name" alias in data, or 0, 0.
func findAlias(data []byte, name string) (line, col int) {
	text := string(data)
	for off := 0; ; {
		i := strings.Index(text[off:], "*"+name)
		if i < 0 {
			return 0, 0
		}
		i += off
		end := i + 1 + len(name)
		if end == len(text) || strings.IndexByte(" \t\r\n,]}", text[end]) >= 0 {
			line = 1 + strings.Count(text[:i], "\n")
			col = 1 + utf8.RuneCountInString(text[strings.LastIndexByte(text[:i], '\n')+1:i])
			return line, col
		}
		off = end
	}
}

// Nodes.

// resolve follows aliases to the anchored node.
func resolve(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	return n
}

func isNull(n *yaml.Node) bool {
	return n == nil || n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

// describe names the type of n for "expected X, got Y" messages.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		switch tag := n.ShortTag(); tag {
		case "!!str":
			if s := []rune(n.Value); len(s) > 60 {
				return fmt.Sprintf("the string %q...", string(s[:57]))
			}
			return fmt.Sprintf("the string %q", n.Value)
		case "!!int":
			return "the integer " + n.Value
		case "!!float":
			return "the number " + n.Value
		case "!!bool":
			return "the boolean " + n.Value
		case "!!null":
			return "null"
		case "!!timestamp":
			return "the timestamp " + n.Value
		default:
			return fmt.Sprintf("a value tagged %s", tag)
		}
	}
	return "an unexpected node"
}

func (d *decoder) typeError(n *yaml.Node, path, want string) {
	hint := ""
	switch {
	case want == "a string" && n.Kind == yaml.ScalarNode && !isNull(n):
		hint = "; quote the value to make it a string"
	case (want == "a list of host names" || want == "a list of origins") && n.Kind == yaml.ScalarNode && n.ShortTag() == "!!str":
		hint = fmt.Sprintf("; write [%q] for a list of one", n.Value)
	}
	d.errorf(n, path, "expected %s, got %s%s", want, describe(n), hint)
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

type entry struct{ key, val *yaml.Node }

// mapping checks that n is a mapping whose keys are all in known, with no
// key twice, and returns the entries by key. Unknown keys get hints[key] as
// an explanation, or a suggestion of the closest known key. A null n is an
// empty mapping. On a type error it returns nil.
func (d *decoder) mapping(n *yaml.Node, path string, known []string, hints map[string]string) map[string]entry {
	n = resolve(n)
	if isNull(n) {
		return map[string]entry{}
	}
	if n.Kind != yaml.MappingNode {
		d.typeError(n, path, "a mapping")
		return nil
	}
	out := make(map[string]entry, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := resolve(n.Content[i]), n.Content[i+1]
		name, ok := d.key(k, path)
		if !ok {
			continue
		}
		if prev, dup := out[name]; dup {
			d.errorf(k, path, "duplicate key %q (first on line %d)", name, prev.key.Line)
			continue
		}
		if !slices.Contains(known, name) {
			switch h, s := hints[name], suggest(name, known); {
			case h != "":
				d.errorf(k, path, "unknown key %q (%s)", name, h)
			case s != "":
				d.errorf(k, path, "unknown key %q; did you mean %q?", name, s)
			default:
				d.errorf(k, path, "unknown key %q; known keys are %s", name, strings.Join(known, ", "))
			}
			// Remember it anyway, so a repeated unknown key is also a duplicate.
		}
		out[name] = entry{k, v}
	}
	for name := range out {
		if !slices.Contains(known, name) {
			delete(out, name)
		}
	}
	return out
}

// key returns the text of a mapping key, reporting merge keys and
// non-scalar keys.
func (d *decoder) key(k *yaml.Node, path string) (string, bool) {
	switch {
	case k.Kind != yaml.ScalarNode:
		d.errorf(k, path, "a key must be a string, got %s", describe(k))
		return "", false
	case k.ShortTag() == "!!merge":
		d.errorf(k, path, "YAML merge keys (<<) are not supported; repeat the keys, or use an alias (*name) for the whole value")
		return "", false
	case isNull(k):
		d.errorf(k, path, "a key must not be null or empty")
		return "", false
	}
	return k.Value, true
}

// seq returns the items of a list, aliases resolved. A null n is an empty
// list. want describes the list for type errors, such as "a list of host
// names".
func (d *decoder) seq(n *yaml.Node, path, want string) ([]*yaml.Node, bool) {
	n = resolve(n)
	if isNull(n) {
		return nil, true
	}
	if n.Kind != yaml.SequenceNode {
		d.typeError(n, path, want)
		return nil, false
	}
	items := make([]*yaml.Node, len(n.Content))
	for i, it := range n.Content {
		items[i] = resolve(it)
	}
	return items, true
}

// str returns a string scalar; null is "". It reports other types.
func (d *decoder) str(n *yaml.Node, path string) (string, bool) {
	n = resolve(n)
	if isNull(n) {
		return "", true
	}
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!str" {
		d.typeError(n, path, "a string")
		return "", false
	}
	return n.Value, true
}

// listItem is a string from a list, with its node and index.
type listItem struct {
	val   string
	node  *yaml.Node
	index int
}

// strList returns the non-empty strings of a list, reporting other items.
func (d *decoder) strList(n *yaml.Node, path, want string) []listItem {
	items, ok := d.seq(n, path, want)
	if !ok {
		return nil
	}
	var out []listItem
	for i, it := range items {
		p := fmt.Sprintf("%s[%d]", path, i)
		s, ok := d.str(it, p)
		if !ok {
			continue
		}
		if s == "" {
			d.errorf(it, p, "must not be empty")
			continue
		}
		out = append(out, listItem{s, it, i})
	}
	return out
}

// stringMap decodes a mapping of strings to scalars, taking each scalar as
// written ("8080", "true", "1.10"). Keys must be non-empty; null values and
// nested mappings or lists are reported.
func (d *decoder) stringMap(n *yaml.Node, path string) (keys []string, vals map[string]string, nodes map[string]entry) {
	n = resolve(n)
	if isNull(n) {
		return nil, nil, nil
	}
	if n.Kind != yaml.MappingNode {
		d.typeError(n, path, "a mapping of names to strings")
		return nil, nil, nil
	}
	vals = map[string]string{}
	nodes = map[string]entry{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := resolve(n.Content[i]), resolve(n.Content[i+1])
		name, ok := d.key(k, path)
		if !ok {
			continue
		}
		if prev, dup := nodes[name]; dup {
			d.errorf(k, path, "duplicate key %q (first on line %d)", name, prev.key.Line)
			continue
		}
		nodes[name] = entry{k, v}
		p := join(path, name)
		switch {
		case v.Kind == yaml.MappingNode || v.Kind == yaml.SequenceNode:
			d.errorf(v, p, "expected a string, got %s; values cannot be nested", describe(v))
			continue
		case isNull(v):
			d.errorf(v, p, `value is null; write "" for an empty string`)
			continue
		case strings.IndexByte(v.Value, 0) >= 0:
			d.errorf(v, p, "must not contain a NUL character")
			continue
		}
		keys = append(keys, name)
		vals[name] = v.Value
	}
	if len(vals) == 0 {
		vals = nil
	}
	return keys, vals, nodes
}

func (d *decoder) boolean(n *yaml.Node, path string) (bool, bool) {
	n = resolve(n)
	if isNull(n) {
		return false, true
	}
	var b bool
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!bool" || n.Decode(&b) != nil {
		d.typeError(n, path, "a boolean (true or false)")
		return false, false
	}
	return b, true
}

func (d *decoder) integer(n *yaml.Node, path string) (int64, bool) {
	n = resolve(n)
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" {
		d.typeError(n, path, "an integer")
		return 0, false
	}
	var v int64
	if err := n.Decode(&v); err != nil {
		d.errorf(n, path, "integer %s is out of range", n.Value)
		return 0, false
	}
	return v, true
}

func (d *decoder) duration(n *yaml.Node, path string) (time.Duration, bool) {
	n = resolve(n)
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!str" {
		d.typeError(n, path, `a duration with a unit, such as "30s" or "10m"`)
		return 0, false
	}
	v, err := time.ParseDuration(n.Value)
	if err != nil {
		d.errorf(n, path, "invalid duration %q: use a number with a unit (ns, us, ms, s, m, h), such as 30s, 1m30s or 1.5h", n.Value)
		return 0, false
	}
	if v <= 0 {
		d.errorf(n, path, "must be greater than 0, got %s", n.Value)
		return 0, false
	}
	return v, true
}

// size decodes a byte size given as an integer or a ParseSize string and
// checks 1 <= size <= max.
func (d *decoder) size(n *yaml.Node, path string, max int64, maxWhy string) (int64, bool) {
	n = resolve(n)
	var v int64
	switch {
	case n.Kind == yaml.ScalarNode && n.ShortTag() == "!!int":
		if err := n.Decode(&v); err != nil {
			d.errorf(n, path, "integer %s is out of range", n.Value)
			return 0, false
		}
		if v < 0 {
			d.errorf(n, path, "must not be negative")
			return 0, false
		}
	case n.Kind == yaml.ScalarNode && n.ShortTag() == "!!str":
		var problem string
		if v, problem = parseSize(n.Value); problem != "" {
			d.errorf(n, path, "invalid size %q: %s", n.Value, problem)
			return 0, false
		}
	default:
		d.typeError(n, path, `a size such as "64MiB" or a number of bytes`)
		return 0, false
	}
	if v == 0 {
		d.errorf(n, path, "must be greater than 0")
		return 0, false
	}
	if v > max {
		d.errorf(n, path, "%s is more than the maximum of %s%s", n.Value, formatSize(max), maxWhy)
		return 0, false
	}
	return v, true
}
