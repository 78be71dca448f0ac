// Package typed offers tools whose arguments and results are Go types, for
// Hangar plugins written with package [github.com/hangar-mcp/hangar/pdk].
//
//	type addIn struct {
//		A float64 `json:"a" jsonschema:"the first number"`
//		B float64 `json:"b" jsonschema:"the second number"`
//	}
//
//	type addOut struct {
//		Sum float64 `json:"sum"`
//	}
//
//	func init() {
//		typed.AddTool(&pdk.Tool{Name: "add", Description: "Add two numbers."},
//			func(ctx *pdk.Context, in addIn) (addOut, error) {
//				return addOut{Sum: in.A + in.B}, nil
//			})
//	}
//
// The schemas are inferred with github.com/google/jsonschema-go, as the MCP
// Go SDK's mcp.AddTool infers them. That package is not part of pdk itself
// because importing it costs every module that links it, whether or not it
// adds typed tools: about 750KB of WebAssembly (a fifth more than a small
// plugin, and as much more compiling when Hangar loads it) and a few
// milliseconds of start-up per instance (see RATIONALE.md, "Why typed tools
// in their own package?"). Plugins that write their schemas by hand with
// [pdk.AddTool] do not pay for it.
package typed

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/hangar-mcp/hangar/pdk"
	"github.com/hangar-mcp/hangar/pdk/internal/fastjson"
)

// AddTool offers a tool whose arguments are the Go type In and whose result
// is the Go type Out, replacing any tool of the same name. It is
// [pdk.AddTool] with the JSON work done:
//
//   - When t.InputSchema is nil, the input schema is inferred from In with
//     [github.com/google/jsonschema-go/jsonschema.For]: a struct's exported
//     fields become properties named by their json tags, required unless
//     tagged omitempty or omitzero, with no other properties allowed; a
//     `jsonschema:"..."` tag is the property's description, and an
//     `mcpheader:"Name"` tag on a string, boolean or integer field makes
//     the property an MCP 2026-07-28 header parameter ("x-mcp-header":
//     "Name"), which clients send in the Mcp-Param-Name HTTP header too.
//     In must be a struct, a map with string keys, a pointer to one of
//     those, or any (which takes any object).
//   - When t.OutputSchema is nil and Out is not any, the output schema is
//     inferred from Out the same way. Out must be a struct, a map with
//     string keys or a pointer to one of those, since MCP's structured
//     content is a JSON object.
//   - The arguments are decoded into a new In before h runs, strictly:
//     an unknown field (of a struct) or a value of the wrong type makes the
//     call a tool error ("invalid arguments for tool ...") that h never
//     sees. Hangar has already checked them against the input schema, so
//     missing required properties never reach the plugin under Hangar.
//   - The value h returns becomes the result's structured content, and its
//     JSON text the result's one text block, as MCP recommends for clients
//     that do not read structured content. A nil pointer is returned as the
//     zero value it points to. With Out any, the output schema is left out,
//     and the structured content too unless the value encodes to a JSON
//     object.
//   - An error from h makes the call a tool error with the error's message,
//     as with pdk.AddTool.
//
// Schemas set in t are used as they are, so a tool can describe its
// arguments in more detail (enums, formats, bounds) than Go types say. The
// schemas are inferred once, when the tool is added.
//
// AddTool panics if the name is empty, h is nil, or a schema cannot be
// inferred (an unsupported type such as a channel or a function, a type
// that is not an object, a cycle).
func AddTool[In, Out any](t *pdk.Tool, h func(ctx *pdk.Context, in In) (Out, error)) {
	if t.Name == "" || h == nil {
		panic("typed: AddTool needs a tool name and a handler")
	}
	tool := *t
	if tool.InputSchema == nil {
		s, err := objectSchema(reflect.TypeFor[In]())
		if err != nil {
			panic(fmt.Sprintf("typed: AddTool %q: input type: %v", t.Name, err))
		}
		tool.InputSchema = s
	}
	outType := reflect.TypeFor[Out]()
	if tool.OutputSchema == nil && outType != reflect.TypeFor[any]() {
		s, err := objectSchema(outType)
		if err != nil {
			panic(fmt.Sprintf("typed: AddTool %q: output type: %v", t.Name, err))
		}
		tool.OutputSchema = s
	}
	pdk.AddTool(&tool, handler(h))
}

// objectSchema infers the JSON Schema of t, which must describe a JSON
// object, and returns it encoded. A pointer type has the schema of the type
// it points to; any has {"type":"object"}.
func objectSchema(t reflect.Type) (json.RawMessage, error) {
	if t == reflect.TypeFor[any]() {
		return json.RawMessage(`{"type":"object"}`), nil
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	s, err := jsonschema.ForType(t, nil)
	if err != nil {
		return nil, err
	}
	if s.Type != "object" {
		return nil, fmt.Errorf("%v is not a JSON object (its schema has type %q); use a struct or a map with string keys", t, schemaType(s))
	}
	if err := headerParams(t, s); err != nil {
		return nil, err
	}
	return json.Marshal(s)
}

// headerParams marks the properties of s whose fields of the struct t are
// tagged `mcpheader:"Name"` with "x-mcp-header": "Name": MCP 2026-07-28
// clients then send the argument in the Mcp-Param-Name HTTP header too,
// where proxies and load balancers can route on it, and Hangar checks
// that the two agree. Only top-level fields of type string, bool or an
// integer may be marked; the names are checked by Hangar when it loads
// the plugin (a tool that breaks the revision's rules is not offered).
func headerParams(t reflect.Type, s *jsonschema.Schema) error {
	if t.Kind() != reflect.Struct {
		return nil
	}
	for _, f := range reflect.VisibleFields(t) {
		name, ok := f.Tag.Lookup("mcpheader")
		if !ok || !f.IsExported() || len(f.Index) != 1 {
			continue
		}
		prop := strings.Split(f.Tag.Get("json"), ",")[0]
		if prop == "" {
			prop = f.Name
		}
		p := s.Properties[prop]
		if p == nil || name == "" {
			return fmt.Errorf("field %s: mcpheader needs a header name and a property of the schema", f.Name)
		}
		switch f.Type.Kind() {
		case reflect.String, reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		default:
			return fmt.Errorf("field %s: mcpheader marks a string, a boolean or an integer, not %s", f.Name, f.Type)
		}
		if p.Extra == nil {
			p.Extra = map[string]any{}
		}
		p.Extra["x-mcp-header"] = name
	}
	return nil
}

// schemaType describes the type of an inferred schema for an error message.
func schemaType(s *jsonschema.Schema) string {
	if s.Type != "" {
		return s.Type
	}
	return strings.Join(s.Types, ", ")
}

// handler adapts a typed handler to a pdk.ToolHandler: it decodes the
// arguments and encodes the result.
func handler[In, Out any](h func(*pdk.Context, In) (Out, error)) pdk.ToolHandler {
	return func(ctx *pdk.Context, req *pdk.CallToolRequest) (*pdk.CallToolResult, error) {
		var in In
		if err := decodeArguments(req.Arguments, &in); err != nil {
			return nil, fmt.Errorf("invalid arguments for tool %q: %s", req.Name, strings.TrimPrefix(err.Error(), "json: "))
		}
		out, err := h(ctx, in)
		if err != nil {
			return nil, err
		}
		return structuredResult(out)
	}
}

// decodeArguments decodes tool arguments into v strictly: fields a struct
// does not have are errors. Absent or null arguments leave v as it is.
func decodeArguments(args json.RawMessage, v any) error {
	if len(args) == 0 || string(args) == "null" {
		return nil
	}
	if fastjson.Bind(args, v, true) {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// structuredResult returns out as a tool result: its JSON as the one text
// block and, when that is an object, as the structured content.
func structuredResult[Out any](out Out) (*pdk.CallToolResult, error) {
	var v any = out
	if rv := reflect.ValueOf(v); rv.Kind() == reflect.Pointer && rv.IsNil() {
		v = reflect.Zero(rv.Type().Elem()).Interface()
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encoding the tool's result: %w", err)
	}
	res := pdk.TextResult(string(b))
	if len(b) > 0 && b[0] == '{' {
		res.StructuredContent = json.RawMessage(b)
	}
	return res, nil
}
