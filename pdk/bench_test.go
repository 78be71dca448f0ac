package pdk

import (
	"encoding/json"
	"strings"
	"testing"
)

// benchEnvelope is what Hangar sends to the benchmark's echo tool.
const benchEnvelope = `{"request":{"name":"echo","arguments":{"text":"The quick brown fox jumps over the lazy dog."}},"context":{"id":"1","_meta":{}}}`

// BenchmarkCallTool runs the echo tool of bench/plugins/echo through the
// export's dispatch, natively: the PDK's share of a call, without the Wasm
// engine. The instructions a call costs in a guest are measured by the
// benchmark's instructions section (go run ./bench -sections instructions).
func BenchmarkCallTool(b *testing.B) {
	saved := plugin
	plugin = new(registry)
	defer func() { plugin = saved }()
	addEcho()
	in := []byte(benchEnvelope)
	h := &fakeHost{}
	b.ReportAllocs()
	for b.Loop() {
		out, err := plugin.invoke(h, exportCallTool, in)
		if err != nil || len(out) == 0 {
			b.Fatal(out, err)
		}
	}
}

// TestCallToolAllocations: a call of the echo tool allocates the frame,
// the _meta map, what the handler allocates (its arguments, their text,
// the result) and the output, and nothing else. Each allocation costs a
// Go guest about 2,000 instructions.
func TestCallToolAllocations(t *testing.T) {
	withRegistry(t)
	addEcho()
	in := []byte(benchEnvelope)
	h := &fakeHost{}
	var out []byte
	n := testing.AllocsPerRun(100, func() {
		var err error
		if out, err = plugin.invoke(h, exportCallTool, in); err != nil {
			t.Fatal(err)
		}
	})
	if want := `{"content":[{"type":"text","text":"The quick brown fox jumps over the lazy dog."}]}`; string(out) != want {
		t.Fatalf("output %s, want %s", out, want)
	}
	if n > 6 {
		t.Errorf("%v allocations per call, want at most 6", n)
	}
}

// TestCallToolLeavesResult: the result a handler returns is encoded, not
// changed, and a result without content gets an empty one.
func TestCallToolLeavesResult(t *testing.T) {
	withRegistry(t)
	shared := &CallToolResult{Content: []Content{&TextContent{Text: "same"}}, IsError: true}
	bare := &CallToolResult{StructuredContent: map[string]any{"a": 1}}
	AddTool(&Tool{Name: "shared"}, func(*Context, *CallToolRequest) (*CallToolResult, error) { return shared, nil })
	AddTool(&Tool{Name: "bare"}, func(*Context, *CallToolRequest) (*CallToolResult, error) { return bare, nil })
	for i := range 2 {
		out, err := plugin.invoke(&fakeHost{}, exportCallTool, []byte(`{"request":{"name":"shared"},"context":{"id":"1","_meta":{}}}`))
		if want := `{"content":[{"type":"text","text":"same"}],"isError":true}`; err != nil || string(out) != want {
			t.Fatalf("call %d: %s, %v; want %s", i, out, err, want)
		}
	}
	out, err := plugin.invoke(&fakeHost{}, exportCallTool, []byte(`{"request":{"name":"bare"},"context":{"id":"1","_meta":{}}}`))
	if want := `{"content":[],"structuredContent":{"a":1}}`; err != nil || string(out) != want {
		t.Errorf("bare: %s, %v; want %s", out, err, want)
	}
	if bare.Content != nil || len(shared.Content) != 1 || !shared.IsError {
		t.Errorf("the handler's results changed: %+v %+v", bare, shared)
	}
}

// TestCallToolID: the handler gets the request id as encoding/json reads
// a string (null as ""), or else the id's JSON text, and a short one, as
// hosts send, costs no allocation of its own.
func TestCallToolID(t *testing.T) {
	withRegistry(t)
	var got string
	AddTool(&Tool{Name: "id"}, func(ctx *Context, _ *CallToolRequest) (*CallToolResult, error) {
		got = ctx.ID
		return TextResult("ok"), nil
	})
	long := strings.Repeat("x", 24)
	for _, id := range []string{`"1"`, `""`, `"42"`, `"` + long + `"`, `"` + long + `y"`, `"a\u0062"`, `"\ud800x"`, `"\u00e9\n"`, "\"\xff\xfe\"", `"é"`, `12345`, `-1.5e3`, `null`, `1`, `123456789012345678901234567890`} {
		in := []byte(`{"request":{"name":"id"},"context":{"id":` + id + `,"_meta":{}}}`)
		if _, err := plugin.invoke(&fakeHost{}, exportCallTool, in); err != nil {
			t.Fatal(id, err)
		}
		want, s := id, ""
		if json.Unmarshal([]byte(id), &s) == nil {
			want = s
		}
		if got != want {
			t.Errorf("id %s: %q, want %q", id, got, want)
		}
	}
	short := []byte(`{"request":{"name":"id"},"context":{"id":"1","_meta":{}}}`)
	in := []byte(`{"request":{"name":"id"},"context":{"id":"` + long + `","_meta":{}}}`)
	h := &fakeHost{}
	base := testing.AllocsPerRun(50, func() { plugin.invoke(h, exportCallTool, short) })
	if n := testing.AllocsPerRun(50, func() { plugin.invoke(h, exportCallTool, in) }); n > base {
		t.Errorf("an id of 24 bytes: %v allocations per call, %v with an id of one", n, base)
	}
	if got != long {
		t.Errorf("id %q, want %q", got, long)
	}
}

// TestServeOutputBuffer: a text result is encoded into the buffer serve
// is given when it fits, as the wasip1 exports give it the last output's;
// one that does not fit gets a buffer of its own.
func TestServeOutputBuffer(t *testing.T) {
	withRegistry(t)
	addEcho()
	buf := make([]byte, 3, 200)
	h, in := &fakeHost{}, []byte(benchEnvelope)
	out, err := plugin.serve(h, exportCallTool, (*registry).callTool, in, buf)
	if want := `{"content":[{"type":"text","text":"The quick brown fox jumps over the lazy dog."}]}`; err != nil || string(out) != want {
		t.Fatalf("output %s, %v; want %s", out, err, want)
	}
	if &out[0] != &buf[:1][0] {
		t.Error("the output is not in the buffer given")
	}
	if n := testing.AllocsPerRun(50, func() {
		plugin.serve(h, exportCallTool, (*registry).callTool, in, buf)
	}); n > 5 {
		t.Errorf("%v allocations per call with a buffer, want at most 5", n)
	}
	long := `{"request":{"name":"echo","arguments":{"text":"` + strings.Repeat("x", 300) + `"}},"context":{"id":"1","_meta":{}}}`
	out, err = plugin.serve(h, exportCallTool, (*registry).callTool, []byte(long), buf)
	if err != nil || !strings.Contains(string(out), strings.Repeat("x", 300)) || &out[0] == &buf[:1][0] {
		t.Errorf("a longer output: %s, %v", out, err)
	}
}

// addEcho adds the benchmark plugin's echo tool (bench/plugins/echo).
func addEcho() {
	AddTool(&Tool{Name: "echo"}, func(_ *Context, req *CallToolRequest) (*CallToolResult, error) {
		var args struct {
			Text string `json:"text"`
		}
		if err := req.BindArguments(&args); err != nil {
			return nil, err
		}
		return TextResult(args.Text), nil
	})
}
