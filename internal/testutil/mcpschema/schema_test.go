package mcpschema

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// example is one file of testdata/examples: a valid instance of def.
type example struct {
	def, file string
	data      []byte
}

func examples(t *testing.T) []example {
	t.Helper()
	files, err := filepath.Glob("testdata/examples/*/*.json")
	if err != nil || len(files) < 100 {
		t.Fatalf("examples: %d files, %v", len(files), err)
	}
	var out []example
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, example{def: filepath.Base(filepath.Dir(f)), file: filepath.Base(f), data: b})
	}
	return out
}

// Every example of the revision is valid by its definition.
func TestExamplesAreValid(t *testing.T) {
	defs := Definitions()
	for _, ex := range examples(t) {
		if !slices.Contains(defs, ex.def) {
			t.Errorf("%s/%s: the schema has no definition %s", ex.def, ex.file, ex.def)
			continue
		}
		if err := CheckDefinition(ex.def, ex.data); err != nil {
			t.Errorf("%s/%s: %v", ex.def, ex.file, err)
		}
	}
}

// schemaDef returns the schema's definition name as a plain map.
func schemaDef(t *testing.T, name string) map[string]any {
	t.Helper()
	plainOnce.Do(func() {
		var s struct {
			Defs map[string]map[string]any `json:"$defs"`
		}
		if err := json.Unmarshal(schemaJSON, &s); err != nil {
			panic(err)
		}
		plainDefs = s.Defs
	})
	return plainDefs[name]
}

var (
	plainOnce sync.Once
	plainDefs map[string]map[string]any
)

// deref follows a property schema's $ref within the definitions.
func deref(t *testing.T, prop map[string]any) map[string]any {
	for i := 0; i < 5; i++ {
		ref, ok := prop["$ref"].(string)
		if !ok {
			return prop
		}
		prop = schemaDef(t, strings.TrimPrefix(ref, "#/$defs/"))
	}
	return prop
}

// wrongValue returns a JSON value that a property schema with these types
// refuses, or false when it cannot tell (no type).
func wrongValue(prop map[string]any) (any, bool) {
	var types []string
	switch v := prop["type"].(type) {
	case string:
		types = []string{v}
	case []any:
		for _, x := range v {
			types = append(types, x.(string))
		}
	default:
		return nil, false
	}
	if c, ok := prop["const"]; ok {
		if s, ok := c.(string); ok {
			return s + "-mutant", true
		}
		if n, ok := c.(float64); ok {
			return n + 1, true
		}
	}
	if _, ok := prop["enum"]; ok && slices.Contains(types, "string") {
		return "not-in-the-enum", true
	}
	for _, cand := range []struct {
		typ string
		v   any
	}{{"object", map[string]any{"mutant": true}}, {"array", []any{}}, {"string", "mutant"}, {"boolean", true}, {"number", 1.5}, {"null", nil}} {
		ok := !slices.Contains(types, cand.typ)
		if cand.typ == "object" && len(types) == 0 {
			ok = false
		}
		if ok {
			return cand.v, true
		}
	}
	return nil, false
}

// Mutations of the examples are invalid: each required property removed,
// and each typed property given a value of another type (or another
// constant, or a string outside its enum). This shows that the validator
// reads the schema rather than accepting anything.
func TestMutatedExamplesAreInvalid(t *testing.T) {
	mutants := 0
	for _, ex := range examples(t) {
		var v map[string]any
		if json.Unmarshal(ex.data, &v) != nil {
			continue // not an object (a schema of a primitive)
		}
		def := deref(t, schemaDef(t, ex.def))
		try := func(what string, m map[string]any) {
			t.Helper()
			b, _ := json.Marshal(m)
			mutants++
			if err := CheckDefinition(ex.def, b); err == nil {
				t.Errorf("%s/%s %s: still valid: %s", ex.def, ex.file, what, b)
			}
		}
		required, _ := def["required"].([]any)
		for _, r := range required {
			m := clone(v)
			delete(m, r.(string))
			try("without "+r.(string), m)
		}
		props, _ := def["properties"].(map[string]any)
		for name := range v {
			p, ok := props[name].(map[string]any)
			if !ok {
				continue
			}
			wrong, ok := wrongValue(deref(t, p))
			if !ok {
				continue
			}
			m := clone(v)
			m[name] = wrong
			try(fmt.Sprintf("with %s = %v", name, wrong), m)
		}
	}
	if mutants < 200 {
		t.Errorf("only %d mutants", mutants)
	}
	t.Logf("%d mutants, all invalid", mutants)
}

func clone(v map[string]any) map[string]any {
	b, _ := json.Marshal(v)
	var m map[string]any
	json.Unmarshal(b, &m)
	return m
}

// readExample returns testdata/examples/def/file.
func readExample(t *testing.T, def, file string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "examples", def, file))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Check finds what a whole message is: the examples of responses with the
// method they answer, of notifications, of errors.
func TestCheckFindsTheMessageType(t *testing.T) {
	responses := map[string]string{
		"CallToolResultResponse":              "tools/call",
		"CompleteResultResponse":              "completion/complete",
		"DiscoverResultResponse":              "server/discover",
		"GetPromptResultResponse":             "prompts/get",
		"ListPromptsResultResponse":           "prompts/list",
		"ListResourceTemplatesResultResponse": "resources/templates/list",
		"ListResourcesResultResponse":         "resources/list",
		"ListToolsResultResponse":             "tools/list",
		"ReadResourceResultResponse":          "resources/read",
		"SubscriptionsListenResultResponse":   "subscriptions/listen",
	}
	seen := map[string]bool{}
	for _, ex := range examples(t) {
		var label string
		var m *Message
		var err error
		switch {
		case responses[ex.def] != "":
			m, err = Check(responses[ex.def], ex.data)
			label = responses[ex.def] + " complete"
		case slices.Contains(mapValues(Notifications), ex.def):
			m, err = Check("", ex.data)
			var n struct{ Method string }
			json.Unmarshal(ex.data, &n)
			label = n.Method
		case ex.def == "InputRequiredResult":
			m, err = Check("prompts/get", []byte(`{"jsonrpc":"2.0","id":"x","result":`+string(ex.data)+`}`))
			label = "prompts/get input_required"
		case strings.HasSuffix(ex.def, "Error"):
			msg := ex.data
			if !strings.Contains(string(msg), `"jsonrpc"`) {
				msg = []byte(`{"jsonrpc":"2.0","id":7,"error":` + string(msg) + `}`)
			}
			m, err = Check("tools/call", msg)
			var e struct {
				Code  int
				Error struct{ Code int }
			}
			json.Unmarshal(ex.data, &e)
			label = fmt.Sprintf("tools/call error %d", e.Code+e.Error.Code)
		default:
			continue
		}
		seen[ex.def] = true
		if ex.file == "read-resource-result-response.json" {
			// This example lacks ttlMs and cacheScope, which the revision
			// requires of resources/read. ReadResourceResultResponse accepts
			// it only through its anyOf's InputRequiredResult (which requires
			// nothing but resultType); Check, reading resultType "complete",
			// holds it to ReadResourceResult.
			if err == nil || !strings.Contains(err.Error(), "ttlMs") {
				t.Errorf("%s/%s: %v, want it refused for its missing ttlMs", ex.def, ex.file, err)
			}
			if CheckDefinition(ex.def, ex.data) != nil {
				t.Errorf("%s/%s: the schema's own definition refuses it", ex.def, ex.file)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s/%s: %v", ex.def, ex.file, err)
		} else if m.Label() != label {
			t.Errorf("%s/%s: found %q, want %q", ex.def, ex.file, m.Label(), label)
		}
	}
	for def := range responses {
		if !seen[def] {
			t.Errorf("no example of %s", def)
		}
	}
	if len(seen) < 25 {
		t.Errorf("only %d kinds of message checked: %v", len(seen), seen)
	}
}

func mapValues(m map[string]string) []string {
	var out []string
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

// What the revision forbids, each found with the reason.
func TestCheckRefuses(t *testing.T) {
	const meta = `"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"hangar","version":"1"}}`
	for _, c := range []struct{ name, method, msg, want string }{
		{"input_required on a list", "tools/list", `{"jsonrpc":"2.0","id":1,"result":{"resultType":"input_required","requestState":"s"}}`, "only tools/call, prompts/get, resources/read"},
		{"input_required with nothing", "tools/call", `{"jsonrpc":"2.0","id":1,"result":{"resultType":"input_required"}}`, "without inputRequests and without requestState"},
		{"input request of an unknown method", "tools/call", `{"jsonrpc":"2.0","id":1,"result":{"resultType":"input_required","inputRequests":{"a":{"method":"ping"}}}}`, "InputRequiredResult"},
		{"elicitation without a message", "tools/call", `{"jsonrpc":"2.0","id":1,"result":{"resultType":"input_required","inputRequests":{"a":{"method":"elicitation/create","params":{"requestedSchema":{"type":"object","properties":{}}}}}}}`, "InputRequiredResult"},
		{"another resultType", "tools/call", `{"jsonrpc":"2.0","id":1,"result":{"resultType":"done","content":[]}}`, `resultType "done"`},
		{"no resultType", "tools/call", `{"jsonrpc":"2.0","id":1,"result":{"content":[]}}`, "JSONRPCResultResponse"},
		{"the result of another method", "tools/call", `{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","tools":[],"ttlMs":0,"cacheScope":"public"}}`, "CallToolResult"},
		{"a list without ttlMs", "tools/list", `{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","tools":[],"cacheScope":"public"}}`, "ListToolsResult"},
		{"a cacheScope outside the enum", "resources/read", `{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","contents":[],"ttlMs":0,"cacheScope":"shared"}}`, "ReadResourceResult"},
		{"discover without versions", "server/discover", `{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","capabilities":{},"ttlMs":0,"cacheScope":"public"}}`, "DiscoverResult"},
		{"listen end without its id", "subscriptions/listen", `{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete"}}`, "SubscriptionsListenResult"},
		{"a result for a removed method", "ping", `{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete"}}`, `a method the revision does not define`},
		{"a result that answers nothing", "", `{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete"}}`, "answers no request"},
		{"a server request", "", `{"jsonrpc":"2.0","id":1,"method":"elicitation/create","params":{}}`, "servers send none"},
		{"a removed notification", "", `{"jsonrpc":"2.0","method":"notifications/elicitation/complete","params":{"elicitationId":"e"}}`, `no server notification "notifications/elicitation/complete"`},
		{"progress without a token", "", `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}}`, "ProgressNotification"},
		{"a log message without data", "", `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info"}}`, "LoggingMessageNotification"},
		{"an acknowledgment without notifications", "", `{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":1}}}`, "SubscriptionsAcknowledgedNotification"},
		{"unsupported version without data", "tools/call", `{"jsonrpc":"2.0","id":1,"error":{"code":-32022,"message":"no"}}`, "UnsupportedProtocolVersionError"},
		{"missing capability without data", "tools/call", `{"jsonrpc":"2.0","id":1,"error":{"code":-32021,"message":"no"}}`, "MissingRequiredClientCapabilityError"},
		{"an error without a message", "tools/call", `{"jsonrpc":"2.0","id":1,"error":{"code":-32602}}`, "JSONRPCErrorResponse"},
		{"a string code", "tools/call", `{"jsonrpc":"2.0","id":1,"error":{"code":"-32602","message":"x"}}`, "JSONRPCErrorResponse"},
		{"both result and error", "tools/call", `{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","content":[]},"error":{"code":1,"message":"x"}}`, "both"},
		{"JSON-RPC 1.0", "tools/call", `{"jsonrpc":"1.0","id":1,"result":{"resultType":"complete","content":[]}}`, "jsonrpc"},
		{"an object id", "tools/call", `{"jsonrpc":"2.0","id":{"a":1},"result":{"resultType":"complete","content":[],` + meta + `}}`, "JSONRPCResultResponse"},
		{"not JSON", "tools/call", `{"jsonrpc":`, "not a JSON object"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Check(c.method, []byte(c.msg))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("Check = %v, want an error with %q", err, c.want)
			}
		})
	}
	// Validate also wants serverInfo in a result's _meta.
	ok := `{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","content":[],` + meta + `}}`
	if _, err := validate("tools/call", []byte(ok)); err != nil {
		t.Errorf("a valid result: %v", err)
	}
	if _, err := validate("tools/call", []byte(`{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","content":[]}}`)); err == nil || !strings.Contains(err.Error(), "serverInfo") {
		t.Errorf("a result without serverInfo: %v", err)
	}
}
