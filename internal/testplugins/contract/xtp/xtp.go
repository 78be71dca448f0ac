// Package xtp turns the XTP schema of Hangar's v1 plugin interface
// (plugin-schema-v1.json, a verbatim copy of shared/spec/plugin-schema-v1.json,
// embedded) into JSON Schemas, and validates the payloads that cross the
// interface against them. It exists for the contract tests of
// internal/plugin and internal/server, which check what Hangar sends to and
// accepts from plugins against the seed schema rather than against Hangar's
// own PDK.
//
// # Conversion
//
// An XTP schema describes each export and import by an input and an output,
// which are either a $ref to one of components.schemas or an inline schema,
// and describes the components in a subset of OpenAPI/JSON Schema. The
// converter maps:
//
//   - $ref "#/components/schemas/X" to "#/$defs/X" (a $ref to a component
//     that does not exist is an error);
//   - type, properties, required, items, additionalProperties, oneOf, anyOf,
//     allOf as they are;
//   - enum as it is, and a bare string enum ("enum": "form", which the file
//     uses for FormElicitRequestMode and UrlElicitRequestMode) as a
//     one-value enum;
//   - nullable: true to a type that also allows null;
//   - format "date-time" as it is; the number widths "float", "double",
//     "int32", "int64" are dropped (they say how a PDK stores the value,
//     not which JSON values are valid);
//   - description and contentType are dropped, except for one use of
//     description: XTP cannot express a union, so the file declares
//     polymorphic members as "type": "object" and names the alternatives in
//     prose ("One of TextContent, ImageContent or AudioContent"). An object
//     schema without properties whose description names two or more
//     components becomes anyOf those components ("A map of X or Y definitions" becomes
//     additionalProperties: anyOf X, Y). [Contract.Unions] lists every such
//     member, so a test can pin them.
//
// Any other keyword is an error, so that a change of the file that the
// converter does not understand fails the tests instead of being ignored.
//
// Every payload is checked two ways. Strict validation adds
// additionalProperties: false to every object schema that declares
// properties: a member the schema does not name (for example one Hangar
// names differently) is an error. It is the check for what Hangar sends.
// Loose validation is the schema as written, which allows other members.
package xtp

import (
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"
)

//go:embed plugin-schema-v1.json
var schemaV1 []byte

// SchemaV1 returns the embedded copy of plugin-schema-v1.json.
func SchemaV1() []byte { return slices.Clone(schemaV1) }

// Contract is an XTP schema converted to JSON Schemas.
type Contract struct {
	exports, imports map[string]*Function
	unions           map[string][]string
	defs             map[string]any // converted components, loose
	strictDefs       map[string]any
}

// Function is one export or import.
type Function struct {
	Name string
	// Input and Output are nil when the function takes or returns nothing.
	Input, Output *Payload
}

// Payload is the schema of a function's input or output.
type Payload struct {
	// Schema is the converted JSON Schema (loose), with the components
	// under $defs.
	Schema       map[string]any
	strict       map[string]any
	loose, tight *jsonschema.Resolved
}

var (
	loadOnce sync.Once
	loaded   *Contract
	loadErr  error
)

// Load converts the embedded plugin-schema-v1.json (once; the Contract is
// read-only and shared).
func Load() (*Contract, error) {
	loadOnce.Do(func() { loaded, loadErr = Parse(schemaV1) })
	return loaded, loadErr
}

// Parse converts an XTP schema document.
func Parse(doc []byte) (*Contract, error) {
	var raw struct {
		Exports    map[string]map[string]any `json:"exports"`
		Imports    map[string]map[string]any `json:"imports"`
		Components struct {
			Schemas map[string]map[string]any `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(doc, &raw); err != nil {
		return nil, fmt.Errorf("decoding XTP schema: %w", err)
	}
	c := &Contract{
		exports: map[string]*Function{}, imports: map[string]*Function{},
		unions: map[string][]string{}, defs: map[string]any{}, strictDefs: map[string]any{},
	}
	names := map[string]bool{}
	for name := range raw.Components.Schemas {
		names[name] = true
	}
	var errs []error
	for _, strict := range []bool{false, true} {
		conv := &converter{names: names, strict: strict, unions: c.unions}
		defs := c.defs
		if strict {
			defs = c.strictDefs
		}
		for name, s := range raw.Components.Schemas {
			out, err := conv.node("components.schemas."+name, s)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			defs[name] = out
		}
	}
	for kind, fns := range map[string]map[string]map[string]any{"exports": raw.Exports, "imports": raw.Imports} {
		into := c.exports
		if kind == "imports" {
			into = c.imports
		}
		for name, fn := range fns {
			f := &Function{Name: name}
			for key, v := range fn {
				path := kind + "." + name + "." + key
				switch key {
				case "description":
				case "input", "output":
					m, ok := v.(map[string]any)
					if !ok {
						errs = append(errs, fmt.Errorf("%s: not an object", path))
						continue
					}
					p, err := c.payload(path, m, names)
					if err != nil {
						errs = append(errs, err)
						continue
					}
					if key == "input" {
						f.Input = p
					} else {
						f.Output = p
					}
				default:
					errs = append(errs, fmt.Errorf("%s: unknown member", path))
				}
			}
			into[name] = f
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return c, nil
}

func (c *Contract) payload(path string, m map[string]any, names map[string]bool) (*Payload, error) {
	p := &Payload{}
	for _, strict := range []bool{false, true} {
		conv := &converter{names: names, strict: strict, unions: c.unions}
		s, err := conv.node(path, m)
		if err != nil {
			return nil, err
		}
		defs := c.defs
		if strict {
			defs = c.strictDefs
		}
		s["$defs"] = defs
		b, err := json.Marshal(s)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		var js jsonschema.Schema
		if err := json.Unmarshal(b, &js); err != nil {
			return nil, fmt.Errorf("%s: converted schema: %w", path, err)
		}
		r, err := js.Resolve(nil)
		if err != nil {
			return nil, fmt.Errorf("%s: resolving converted schema: %w", path, err)
		}
		if strict {
			p.strict, p.tight = s, r
		} else {
			p.Schema, p.loose = s, r
		}
	}
	return p, nil
}

// Export returns the export called name, or nil.
func (c *Contract) Export(name string) *Function { return c.exports[name] }

// Import returns the import called name, or nil.
func (c *Contract) Import(name string) *Function { return c.imports[name] }

// Exports returns the names of the exports, sorted.
func (c *Contract) Exports() []string { return sortedKeys(c.exports) }

// Imports returns the names of the imports, sorted.
func (c *Contract) Imports() []string { return sortedKeys(c.imports) }

// Unions returns the members declared as "type": "object" whose description
// names the components they may be, by path ("components.schemas.X.properties.y"),
// with those components' names sorted.
func (c *Contract) Unions() map[string][]string {
	out := make(map[string][]string, len(c.unions))
	for k, v := range c.unions {
		out[k] = slices.Clone(v)
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

// Validate checks the JSON document data strictly: it must be valid, and
// every object with declared properties may have only those.
func (p *Payload) Validate(data []byte) error { return validate(p.tight, data) }

// ValidateLoose checks the JSON document data against the schema as
// written, which allows members it does not name.
func (p *Payload) ValidateLoose(data []byte) error { return validate(p.loose, data) }

func validate(r *jsonschema.Resolved, data []byte) error {
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		return fmt.Errorf("not JSON: %w", err)
	}
	return r.Validate(v)
}

// Uncovered returns the properties the schema declares that the JSON
// document data leaves out, as paths ("messages[0].content.annotations"),
// following $ref, items, additionalProperties and, for anyOf and oneOf, the
// first alternative that data validates against strictly. Tests use it to
// check that a sample payload uses every member of the schema.
func (p *Payload) Uncovered(data []byte) ([]string, error) {
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		return nil, fmt.Errorf("not JSON: %w", err)
	}
	var out []string
	w := &walker{defs: p.strict["$defs"].(map[string]any)}
	if err := w.walk("", p.strict, v, &out); err != nil {
		return nil, err
	}
	sort.Strings(out)
	return out, nil
}

type walker struct{ defs map[string]any }

func (w *walker) walk(path string, s map[string]any, v any, out *[]string) error {
	if ref, ok := s["$ref"].(string); ok {
		name := strings.TrimPrefix(ref, "#/$defs/")
		return w.walk(path, w.defs[name].(map[string]any), v, out)
	}
	for _, key := range []string{"anyOf", "oneOf"} {
		alts, ok := s[key].([]any)
		if !ok {
			continue
		}
		for _, alt := range alts {
			if w.matches(alt.(map[string]any), v) {
				return w.walk(path, alt.(map[string]any), v, out)
			}
		}
		return fmt.Errorf("%s: matches none of %s", orRoot(path), key)
	}
	switch v := v.(type) {
	case map[string]any:
		if props, ok := s["properties"].(map[string]any); ok {
			for _, name := range sortedKeys(props) {
				pv, ok := v[name]
				if !ok {
					*out = append(*out, join(path, name))
					continue
				}
				if err := w.walk(join(path, name), props[name].(map[string]any), pv, out); err != nil {
					return err
				}
			}
		}
		if ap, ok := s["additionalProperties"].(map[string]any); ok {
			for _, name := range sortedKeys(v) {
				if err := w.walk(join(path, name), ap, v[name], out); err != nil {
					return err
				}
			}
		}
	case []any:
		if items, ok := s["items"].(map[string]any); ok {
			for i, item := range v {
				if err := w.walk(fmt.Sprintf("%s[%d]", path, i), items, item, out); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// matches reports whether v is strictly valid against the schema s.
func (w *walker) matches(s map[string]any, v any) bool {
	root := map[string]any{"$defs": w.defs}
	for k, x := range s {
		root[k] = x
	}
	b, err := json.Marshal(root)
	if err != nil {
		return false
	}
	var js jsonschema.Schema
	if json.Unmarshal(b, &js) != nil {
		return false
	}
	r, err := js.Resolve(nil)
	return err == nil && r.Validate(v) == nil
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

func orRoot(path string) string {
	if path == "" {
		return "(root)"
	}
	return path
}

// converter converts one XTP schema node.
type converter struct {
	names  map[string]bool
	strict bool
	unions map[string][]string
}

var word = regexp.MustCompile(`[A-Za-z][A-Za-z0-9]*`)

func (c *converter) node(path string, in map[string]any) (map[string]any, error) {
	out := map[string]any{}
	nullable := false
	desc, _ := in["description"].(string)
	for _, k := range sortedKeys(in) {
		v := in[k]
		switch k {
		case "description", "contentType":
		case "$ref":
			ref, _ := v.(string)
			name, ok := strings.CutPrefix(ref, "#/components/schemas/")
			if !ok || !c.names[name] {
				return nil, fmt.Errorf("%s: $ref %q is not one of components.schemas", path, ref)
			}
			out["$ref"] = "#/$defs/" + name
		case "type":
			t, ok := v.(string)
			if !ok || !slices.Contains([]string{"object", "array", "string", "number", "integer", "boolean"}, t) {
				return nil, fmt.Errorf("%s: unknown type %v", path, v)
			}
			out["type"] = t
		case "properties":
			props, ok := v.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("%s.properties: not an object", path)
			}
			conv := map[string]any{}
			for _, name := range sortedKeys(props) {
				p, ok := props[name].(map[string]any)
				if !ok {
					return nil, fmt.Errorf("%s.properties.%s: not an object", path, name)
				}
				s, err := c.node(path+".properties."+name, p)
				if err != nil {
					return nil, err
				}
				conv[name] = s
			}
			out["properties"] = conv
		case "required":
			list, ok := v.([]any)
			if !ok {
				return nil, fmt.Errorf("%s.required: not an array", path)
			}
			props, _ := in["properties"].(map[string]any)
			for _, r := range list {
				name, ok := r.(string)
				if _, declared := props[name]; !ok || !declared {
					return nil, fmt.Errorf("%s.required: %v is not a declared property", path, r)
				}
			}
			out["required"] = list
		case "items", "additionalProperties":
			switch x := v.(type) {
			case bool:
				if k == "items" {
					return nil, fmt.Errorf("%s.items: not an object", path)
				}
				out[k] = x
			case map[string]any:
				s, err := c.node(path+"."+k, x)
				if err != nil {
					return nil, err
				}
				out[k] = s
			default:
				return nil, fmt.Errorf("%s.%s: not an object", path, k)
			}
		case "oneOf", "anyOf", "allOf":
			list, ok := v.([]any)
			if !ok {
				return nil, fmt.Errorf("%s.%s: not an array", path, k)
			}
			var alts []any
			for i, x := range list {
				m, ok := x.(map[string]any)
				if !ok {
					return nil, fmt.Errorf("%s.%s[%d]: not an object", path, k, i)
				}
				s, err := c.node(fmt.Sprintf("%s.%s[%d]", path, k, i), m)
				if err != nil {
					return nil, err
				}
				alts = append(alts, s)
			}
			out[k] = alts
		case "enum":
			switch x := v.(type) {
			case string:
				out["enum"] = []any{x}
			case []any:
				out["enum"] = x
			default:
				return nil, fmt.Errorf("%s.enum: neither a string nor an array", path)
			}
		case "nullable":
			b, ok := v.(bool)
			if !ok {
				return nil, fmt.Errorf("%s.nullable: not a boolean", path)
			}
			nullable = b
		case "format":
			switch v {
			case "date-time":
				out["format"] = v
			case "float", "double", "int32", "int64":
			default:
				return nil, fmt.Errorf("%s: unknown format %v", path, v)
			}
		default:
			return nil, fmt.Errorf("%s: unknown keyword %q", path, k)
		}
	}
	if nullable {
		if t, ok := out["type"].(string); ok {
			out["type"] = []any{t, "null"}
		}
	}
	_, hasProps := out["properties"]
	_, hasRef := out["$ref"]
	if out["type"] == "object" && !hasProps && !hasRef && desc != "" {
		var alts []any
		var named []string
		for _, w := range word.FindAllString(desc, -1) {
			if c.names[w] && !slices.Contains(named, w) {
				named = append(named, w)
			}
		}
		sort.Strings(named)
		if len(named) < 2 {
			named = nil // "Schema properties" names one component but is no union
		}
		for _, n := range named {
			alts = append(alts, map[string]any{"$ref": "#/$defs/" + n})
		}
		switch {
		case len(alts) == 0:
		case strings.HasPrefix(desc, "A map of"):
			out["additionalProperties"] = map[string]any{"anyOf": alts}
			c.unions[path] = named
		default:
			out["anyOf"] = alts
			c.unions[path] = named
		}
	}
	if c.strict && hasProps {
		if _, ok := out["additionalProperties"]; !ok {
			out["additionalProperties"] = false
		}
	}
	return out, nil
}
