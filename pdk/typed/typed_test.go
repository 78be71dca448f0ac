package typed

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/hangar-mcp/hangar/pdk"
)

type point struct {
	X     int    `json:"x" jsonschema:"across"`
	Y     int    `json:"y"`
	Label string `json:"label,omitempty"`
}

func TestObjectSchema(t *testing.T) {
	for _, c := range []struct {
		typ  reflect.Type
		want string
	}{
		{reflect.TypeFor[point](), `{"type":"object","properties":{"x":{"type":"integer","description":"across"},"y":{"type":"integer"},"label":{"type":"string"}},"required":["x","y"],"additionalProperties":false}`},
		{reflect.TypeFor[*point](), `{"type":"object","properties":{"x":{"type":"integer","description":"across"},"y":{"type":"integer"},"label":{"type":"string"}},"required":["x","y"],"additionalProperties":false}`},
		{reflect.TypeFor[map[string]float64](), `{"type":"object","additionalProperties":{"type":"number"}}`},
		{reflect.TypeFor[any](), `{"type":"object"}`},
	} {
		got, err := objectSchema(c.typ)
		if err != nil {
			t.Errorf("%v: %v", c.typ, err)
			continue
		}
		if string(got) != c.want {
			t.Errorf("%v:\n got %s\nwant %s", c.typ, got, c.want)
		}
	}
	for _, c := range []struct {
		typ  reflect.Type
		want string
	}{
		{reflect.TypeFor[string](), `string is not a JSON object (its schema has type "string")`},
		{reflect.TypeFor[[]point](), `is not a JSON object (its schema has type "null, array")`},
		{reflect.TypeFor[struct{ C chan int }](), "unsupported"},
		{reflect.TypeFor[map[int]string](), "map key"},
	} {
		if _, err := objectSchema(c.typ); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want it to contain %q", c.typ, err, c.want)
		}
	}
}

func TestAddToolPanics(t *testing.T) {
	for name, add := range map[string]func(){
		"no name":    func() { AddTool(&pdk.Tool{}, func(*pdk.Context, point) (point, error) { return point{}, nil }) },
		"no handler": func() { AddTool[point, point](&pdk.Tool{Name: "t"}, nil) },
		"string in": func() {
			AddTool(&pdk.Tool{Name: "t"}, func(*pdk.Context, string) (point, error) { return point{}, nil })
		},
		"slice out":   func() { AddTool(&pdk.Tool{Name: "t"}, func(*pdk.Context, point) ([]int, error) { return nil, nil }) },
		"channel out": func() { AddTool(&pdk.Tool{Name: "t"}, func(*pdk.Context, point) (chan int, error) { return nil, nil }) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: AddTool did not panic", name)
				}
			}()
			add()
		}()
	}
	// Schemas given by hand are used as they are: no panic for a string
	// input whose schema is an object.
	AddTool(&pdk.Tool{Name: "t", InputSchema: json.RawMessage(`{"type":"object"}`), OutputSchema: json.RawMessage(`{"type":"object"}`)},
		func(*pdk.Context, map[string]any) ([]int, error) { return nil, nil })
}

// run calls the adapted handler h with the given arguments.
func run[In, Out any](t *testing.T, h func(*pdk.Context, In) (Out, error), args string) (*pdk.CallToolResult, error) {
	t.Helper()
	req := &pdk.CallToolRequest{Name: "tool"}
	if args != "" {
		req.Arguments = json.RawMessage(args)
	}
	return handler(h)(&pdk.Context{Meta: pdk.Meta{}}, req)
}

func TestHandlerDecodesStrictly(t *testing.T) {
	var got point
	h := func(_ *pdk.Context, in point) (point, error) { got = in; return in, nil }
	if _, err := run(t, h, `{"x":1,"y":2}`); err != nil || got != (point{X: 1, Y: 2}) {
		t.Errorf("decoded %+v, %v", got, err)
	}
	for _, args := range []string{"", "null"} {
		got = point{X: 9}
		if _, err := run(t, h, args); err != nil || got != (point{}) {
			t.Errorf("arguments %q: decoded %+v, %v; want the zero value", args, got, err)
		}
	}
	for args, want := range map[string]string{
		`{"x":1,"y":2,"z":3}`: `invalid arguments for tool "tool": unknown field "z"`,
		`{"x":"1","y":2}`:     `invalid arguments for tool "tool": cannot unmarshal string into Go struct field point.x of type int`,
		`[1]`:                 `invalid arguments for tool "tool": cannot unmarshal array`,
	} {
		if _, err := run(t, h, args); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("arguments %s: error %v, want %q", args, err, want)
		}
	}
}

func TestHandlerResults(t *testing.T) {
	res, err := run(t, func(*pdk.Context, point) (point, error) { return point{X: 1, Y: 2}, nil }, `{}`)
	if err != nil {
		t.Fatal(err)
	}
	if text := res.Content[0].(*pdk.TextContent).Text; text != `{"x":1,"y":2}` {
		t.Errorf("text %q", text)
	}
	if s, ok := res.StructuredContent.(json.RawMessage); !ok || string(s) != `{"x":1,"y":2}` {
		t.Errorf("structured content %#v", res.StructuredContent)
	}

	res, err = run(t, func(*pdk.Context, point) (*point, error) { return nil, nil }, `{}`)
	if err != nil || string(res.StructuredContent.(json.RawMessage)) != `{"x":0,"y":0}` {
		t.Errorf("nil pointer: %v, %v", res, err)
	}

	res, err = run(t, func(*pdk.Context, point) (any, error) { return []int{1}, nil }, `{}`)
	if err != nil || res.StructuredContent != nil || res.Content[0].(*pdk.TextContent).Text != "[1]" {
		t.Errorf("Out any holding an array: %+v, %v", res, err)
	}

	fail := errors.New("no way")
	if _, err := run(t, func(*pdk.Context, point) (point, error) { return point{}, fail }, `{}`); err != fail {
		t.Errorf("handler error: %v", err)
	}
	if _, err := run(t, func(*pdk.Context, point) (map[string]any, error) { return map[string]any{"f": func() {}}, nil }, `{}`); err == nil {
		t.Error("an unencodable result is not an error")
	}
}

type routed struct {
	Region string `json:"region" mcpheader:"Region"`
	Urgent bool   `json:"urgent,omitempty" mcpheader:"Urgent"`
	Count  int    `mcpheader:"Count"`
	Query  string `json:"query"`
}

func TestHeaderParams(t *testing.T) {
	got, err := objectSchema(reflect.TypeFor[routed]())
	if err != nil {
		t.Fatal(err)
	}
	want := `{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"},"urgent":{"type":"boolean","x-mcp-header":"Urgent"},` +
		`"Count":{"type":"integer","x-mcp-header":"Count"},"query":{"type":"string"}},"required":["region","Count","query"],"additionalProperties":false}`
	if string(got) != want {
		t.Errorf("\n got %s\nwant %s", got, want)
	}
	for _, typ := range []reflect.Type{
		reflect.TypeFor[struct {
			Ratio float64 `json:"ratio" mcpheader:"Ratio"`
		}](),
		reflect.TypeFor[struct {
			Tags []string `json:"tags" mcpheader:"Tags"`
		}](),
		reflect.TypeFor[struct {
			Region string `json:"region" mcpheader:""`
		}](),
		reflect.TypeFor[struct {
			Hidden string `json:"-" mcpheader:"Hidden"`
		}](),
	} {
		if _, err := objectSchema(typ); err == nil || !strings.Contains(err.Error(), "mcpheader") {
			t.Errorf("%v: err = %v, want an mcpheader error", typ, err)
		}
	}
}
