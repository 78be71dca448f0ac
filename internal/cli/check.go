package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"unicode"
)

// CheckArgs reports whether args (the arguments after "hangar") is a
// command line hangar accepts, without running anything: the command
// exists, every flag is one of its flags with a valid value, and the
// arguments fit the command's usage line (their number, literal words such
// as "hyper-mcp", and which flags are required or exclude each other). The
// documentation's tests check every hangar command they show with it.
func CheckArgs(args []string) error {
	if len(args) == 0 {
		return errors.New("no command")
	}
	name, rest := args[0], args[1:]
	switch name {
	case "help", "-h", "-help", "--help":
		if len(rest) > 1 {
			return fmt.Errorf("help takes at most one command, got %q", rest)
		}
		if len(rest) == 1 && lookup(rest[0]) == nil {
			return fmt.Errorf("help: unknown command %q", rest[0])
		}
		return nil
	case "--version", "-version":
		name = "version"
	}
	c := lookup(name)
	if c == nil {
		return fmt.Errorf("unknown command %q", name)
	}
	fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	if c.flags != nil {
		c.flags(fs)
	}
	var pos []string
	for {
		if err := fs.Parse(rest); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil
			}
			return fmt.Errorf("hangar %s: %w", c.name, err)
		}
		rest = fs.Args()
		if len(rest) == 0 {
			break
		}
		pos = append(pos, rest[0])
		rest = rest[1:]
	}
	u, err := parseUsage(c.args, fs)
	if err != nil {
		return fmt.Errorf("hangar %s: its usage line %q: %w", c.name, c.args, err)
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	for _, end := range u.match(pos, 0, given) {
		if end == len(pos) {
			return nil
		}
	}
	return fmt.Errorf("hangar %s: arguments %q do not fit the usage: hangar %s %s", c.name, pos, c.name, c.args)
}

// A usageNode is part of a command's usage line, such as
// "[--config FILE] (claude|cursor) PLUGIN.wasm ...". match returns the
// positions in pos after the node matched from position i, given the flags
// set on the command line.
type usageNode interface {
	match(pos []string, i int, given map[string]bool) []int
	flags(into map[string]bool) // the flags the node names
}

type (
	usageWord   struct{ text string } // a placeholder (FILE) or a literal (hyper-mcp)
	usageFlag   struct{ name string } // --name, with its VALUE
	usageAny    struct{}              // "flags": any flags, no argument
	usageSeq    []usageNode
	usageChoice []usageNode
	usageOpt    struct{ n usageNode }
	usageRep    struct{ n usageNode } // one or more
)

func (w usageWord) literal() bool {
	return !strings.ContainsFunc(w.text, unicode.IsUpper) && !strings.HasPrefix(w.text, "'")
}

func (w usageWord) match(pos []string, i int, _ map[string]bool) []int {
	if i < len(pos) && (!w.literal() || pos[i] == w.text) {
		return []int{i + 1}
	}
	return nil
}

func (f usageFlag) match(_ []string, i int, given map[string]bool) []int {
	if given[f.name] {
		return []int{i}
	}
	return nil
}

func (usageAny) match(_ []string, i int, _ map[string]bool) []int { return []int{i} }

func (s usageSeq) match(pos []string, i int, given map[string]bool) []int {
	at := []int{i}
	for _, n := range s {
		var next []int
		for _, j := range at {
			next = appendNew(next, n.match(pos, j, given)...)
		}
		at = next
	}
	return at
}

// match of a choice: an alternative may not be taken with a flag that
// another alternative names and it does not (the flags of pull's
// "REF | --config FILE" exclude REF).
func (c usageChoice) match(pos []string, i int, given map[string]bool) []int {
	all := map[string]bool{}
	c.flags(all)
	var out []int
	for _, alt := range c {
		own := map[string]bool{}
		alt.flags(own)
		excluded := false
		for f := range all {
			if given[f] && !own[f] {
				excluded = true
			}
		}
		if !excluded {
			out = appendNew(out, alt.match(pos, i, given)...)
		}
	}
	return out
}

// match of an optional part: it cannot be left out when a flag it names
// is given, so that the flags of its alternatives still exclude each other.
func (o usageOpt) match(pos []string, i int, given map[string]bool) []int {
	named := map[string]bool{}
	o.n.flags(named)
	for f := range named {
		if given[f] {
			return o.n.match(pos, i, given)
		}
	}
	return appendNew([]int{i}, o.n.match(pos, i, given)...)
}

func (r usageRep) match(pos []string, i int, given map[string]bool) []int {
	var out []int
	at := r.n.match(pos, i, given)
	for len(at) > 0 {
		var next []int
		for _, j := range at {
			if !contains(out, j) {
				out = append(out, j)
				if j > i {
					next = appendNew(next, r.n.match(pos, j, given)...)
				}
			}
		}
		at = next
	}
	return out
}

func (usageWord) flags(map[string]bool)        {}
func (f usageFlag) flags(into map[string]bool) { into[f.name] = true }
func (usageAny) flags(map[string]bool)         {}
func (s usageSeq) flags(into map[string]bool) {
	for _, n := range s {
		n.flags(into)
	}
}
func (c usageChoice) flags(into map[string]bool) {
	for _, n := range c {
		n.flags(into)
	}
}
func (o usageOpt) flags(into map[string]bool) { o.n.flags(into) }
func (r usageRep) flags(into map[string]bool) { r.n.flags(into) }

func contains(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func appendNew(s []int, vs ...int) []int {
	for _, v := range vs {
		if !contains(s, v) {
			s = append(s, v)
		}
	}
	return s
}

// parseUsage parses a usage line: words separated by spaces; [optional];
// (group); a | b for alternatives, loosest of all within a group or the
// line; X ... for one or more; --name (with its VALUE word if the flag of
// fs takes a value); 'quoted words' as one placeholder; "flags" for any
// flags. Words with an upper-case letter are placeholders, others literal.
func parseUsage(line string, fs *flag.FlagSet) (usageNode, error) {
	toks, err := usageTokens(line)
	if err != nil {
		return nil, err
	}
	p := &usageParser{toks: toks, fs: fs}
	n, err := p.choice()
	if err != nil {
		return nil, err
	}
	if p.i < len(p.toks) {
		return nil, fmt.Errorf("unexpected %q", p.toks[p.i])
	}
	return n, nil
}

func usageTokens(line string) ([]string, error) {
	var toks []string
	for i := 0; i < len(line); {
		switch c := line[i]; {
		case c == ' ' || c == '\t':
			i++
		case strings.IndexByte("[]()|", c) >= 0:
			toks = append(toks, string(c))
			i++
		case c == '\'':
			j := strings.IndexByte(line[i+1:], '\'')
			if j < 0 {
				return nil, errors.New("unterminated quote")
			}
			toks = append(toks, line[i:i+j+2])
			i += j + 2
		case strings.HasPrefix(line[i:], "..."):
			toks = append(toks, "...")
			i += 3
		default:
			j := i
			for j < len(line) && strings.IndexByte(" \t[]()|'", line[j]) < 0 && !strings.HasPrefix(line[j:], "...") {
				j++
			}
			toks = append(toks, line[i:j])
			i = j
		}
	}
	return toks, nil
}

type usageParser struct {
	toks []string
	i    int
	fs   *flag.FlagSet
}

func (p *usageParser) peek() string {
	if p.i < len(p.toks) {
		return p.toks[p.i]
	}
	return ""
}

func (p *usageParser) choice() (usageNode, error) {
	var alts usageChoice
	for {
		s, err := p.seq()
		if err != nil {
			return nil, err
		}
		alts = append(alts, s)
		if p.peek() != "|" {
			break
		}
		p.i++
	}
	if len(alts) == 1 {
		return alts[0], nil
	}
	return alts, nil
}

func (p *usageParser) seq() (usageSeq, error) {
	var s usageSeq
	for {
		var n usageNode
		switch t := p.peek(); t {
		case "", "|", "]", ")":
			return s, nil
		case "...":
			return nil, errors.New(`"..." after nothing`)
		case "[", "(":
			p.i++
			inner, err := p.choice()
			if err != nil {
				return nil, err
			}
			closing := map[string]string{"[": "]", "(": ")"}[t]
			if p.peek() != closing {
				return nil, fmt.Errorf("%q without %q", t, closing)
			}
			p.i++
			n = inner
			if t == "[" {
				n = usageOpt{inner}
			}
		default:
			p.i++
			switch {
			case t == "flags":
				n = usageAny{}
			case strings.HasPrefix(t, "-"):
				name := strings.TrimLeft(t, "-")
				f := p.fs.Lookup(name)
				if f == nil {
					return nil, fmt.Errorf("%s is not a flag of the command", t)
				}
				if b, ok := f.Value.(interface{ IsBoolFlag() bool }); !(ok && b.IsBoolFlag()) {
					if v := p.peek(); v == "" || strings.IndexByte("[]()|", v[0]) >= 0 || v == "..." {
						return nil, fmt.Errorf("%s takes a value, and the usage names none", t)
					}
					p.i++ // its VALUE
				}
				n = usageFlag{name}
			default:
				n = usageWord{t}
			}
		}
		if p.peek() == "..." {
			p.i++
			if o, ok := n.(usageOpt); ok { // [X ...] written [X] ...
				n = usageOpt{usageRep{o.n}}
			} else {
				n = usageRep{n}
			}
		}
		s = append(s, n)
	}
}
