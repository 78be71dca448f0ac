package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const inspectJSONUsage = "print JSON instead of text"

var inspectCmd = &command{
	name:  "inspect",
	args:  "[--json] " + oneUsage,
	short: "show a plugin's interface, tools, resources and prompts",
	long: `Inspect loads a plugin and prints the interface it speaks (v1, servlet or
legacy), its exports, and what it offers: tools with their input schemas,
resources, resource templates and prompts, under the plugin's own names.

The plugin is a .wasm file, run with default limits and no grants, or with
--config the plugin of that configuration file named by --plugin, loaded
as serve loads it: its config values, limits and grants apply (a plugin
may offer different tools depending on them). --set adds or overrides
config values. With a prefix configured, inspect says what clients see.`,
	flags: func(fs *flag.FlagSet) { new(oneFlags).register(fs, inspectJSONUsage) },
}

func init() { inspectCmd.run = runInspect }

// inspection is what inspect prints.
type inspection struct {
	Plugin            string                  `json:"plugin"`
	Prefix            string                  `json:"prefix,omitempty"`
	Interface         string                  `json:"interface"`
	Exports           []string                `json:"exports"`
	Tools             []*mcp.Tool             `json:"tools"`
	Resources         []*mcp.Resource         `json:"resources"`
	ResourceTemplates []*mcp.ResourceTemplate `json:"resourceTemplates"`
	Prompts           []*mcp.Prompt           `json:"prompts"`
}

func runInspect(ctx context.Context, env *Env, args []string) error {
	var f oneFlags
	fs := inspectCmd.flagSet(env.Stderr)
	f.register(fs, inspectJSONUsage)
	pos, err := inspectCmd.parse(env, fs, args)
	if err != nil {
		return err
	}
	file, _, ok := f.pluginArgs(env, pos, 0, 0)
	if !ok {
		inspectCmd.help(env.Stderr)
		return errUsage
	}
	// Listing needs no secret: variables the configuration gives the
	// plugin (grants.env) may be unset; the plugin sees them empty.
	f.anyEnv = true
	p, spec, done, err := f.load(ctx, env, file)
	if err != nil {
		return err
	}
	defer done()
	for _, name := range f.unset {
		fmt.Fprintf(env.Stderr, "hangar inspect: %s is not set; listing with it empty (serve and call need it set)\n", name)
	}

	in := inspection{Plugin: p.Name(), Prefix: spec.Prefix, Interface: p.Interface().String()}
	for _, e := range []string{"call_tool", "list_tools", "list_prompts", "get_prompt", "list_resources",
		"list_resource_templates", "read_resource", "complete", "on_roots_list_changed", "describe", "call"} {
		if p.Has(e) {
			in.Exports = append(in.Exports, e)
		}
	}
	var errs []error
	var e error
	in.Tools, e = p.ListTools(ctx, nil)
	errs = append(errs, e)
	in.Resources, e = p.ListResources(ctx, nil)
	errs = append(errs, e)
	in.ResourceTemplates, e = p.ListResourceTemplates(ctx, nil)
	errs = append(errs, e)
	in.Prompts, e = p.ListPrompts(ctx, nil)
	errs = append(errs, e)
	if err := joinErrors(errs...); err != nil {
		return err
	}
	if f.json {
		enc := json.NewEncoder(env.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(in)
	}
	printInspection(env.Stdout, &in)
	return nil
}

func printInspection(w io.Writer, in *inspection) {
	fmt.Fprintf(w, "plugin:    %s\n", in.Plugin)
	if in.Prefix != "" {
		fmt.Fprintf(w, "prefix:    %s (clients see tools and prompts as %s_NAME, URIs as %s+URI)\n", in.Prefix, in.Prefix, in.Prefix)
	}
	fmt.Fprintf(w, "interface: %s\nexports:   %s\n", in.Interface, strings.Join(in.Exports, ", "))
	fmt.Fprintf(w, "\ntools (%d):\n", len(in.Tools))
	for _, t := range in.Tools {
		fmt.Fprintf(w, "  %s", t.Name)
		if t.Description != "" {
			fmt.Fprintf(w, " - %s", firstLine(t.Description))
		}
		fmt.Fprintln(w)
		if args := schemaArgs(t.InputSchema); args != "" {
			fmt.Fprintf(w, "      arguments: %s\n", args)
		}
	}
	fmt.Fprintf(w, "\nresources (%d):\n", len(in.Resources))
	for _, r := range in.Resources {
		fmt.Fprintf(w, "  %s  %s %s\n", r.URI, r.Name, r.MIMEType)
	}
	fmt.Fprintf(w, "\nresource templates (%d):\n", len(in.ResourceTemplates))
	for _, r := range in.ResourceTemplates {
		fmt.Fprintf(w, "  %s  %s %s\n", r.URITemplate, r.Name, r.MIMEType)
	}
	fmt.Fprintf(w, "\nprompts (%d):\n", len(in.Prompts))
	for _, p := range in.Prompts {
		var args []string
		for _, a := range p.Arguments {
			n := a.Name
			if !a.Required {
				n += "?"
			}
			args = append(args, n)
		}
		fmt.Fprintf(w, "  %s(%s)", p.Name, strings.Join(args, ", "))
		if p.Description != "" {
			fmt.Fprintf(w, " - %s", firstLine(p.Description))
		}
		fmt.Fprintln(w)
	}
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}

// schemaArgs summarizes an object schema's properties: "a: number, b?: string".
func schemaArgs(schema any) string {
	m, _ := schema.(map[string]any)
	props, _ := m["properties"].(map[string]any)
	required := map[string]bool{}
	if req, ok := m["required"].([]any); ok {
		for _, r := range req {
			if s, ok := r.(string); ok {
				required[s] = true
			}
		}
	}
	names := make([]string, 0, len(props))
	for n := range props {
		names = append(names, n)
	}
	sort.Strings(names)
	parts := make([]string, 0, len(names))
	for _, n := range names {
		typ := "any"
		if p, ok := props[n].(map[string]any); ok {
			if t, ok := p["type"].(string); ok {
				typ = t
			}
		}
		opt := "?"
		if required[n] {
			opt = ""
		}
		parts = append(parts, n+opt+": "+typ)
	}
	return strings.Join(parts, ", ")
}
