// Package mcpschema checks, in tests, what an MCP server sends at revision
// 2026-07-28 against the revision's JSON Schema (schema.json, embedded;
// README.md says where it comes from).
//
// Check takes one message the server sent and the method of the request
// it answers, finds the message's type and validates it against the
// definition of that type: a result against the result of its method
// (CallToolResult for tools/call, or InputRequiredResult when its
// resultType says so), an error against the error its code names
// (HeaderMismatchError for -32020, InvalidParamsError for -32602, ...), a
// notification against the notification of its method. It also checks what
// the revision requires and the schema cannot say: resultType is "complete"
// or "input_required", input_required answers only tools/call, prompts/get
// and resources/read and carries inputRequests or requestState, a server
// sends no requests. Validate adds Hangar's own promise (serverInfo in every
// result's _meta) and reports through a testing.TB.
//
// A Conversation follows a whole connection: the requests a client sent
// (to know what each response answers), and every message of the server,
// over stdio (Stdio) or Streamable HTTP (RoundTripper), with the rules that
// span messages (log messages only for requests that asked for them, a
// subscription's acknowledgment first, only the notifications it asked
// for, HTTP statuses of the errors, no session IDs).
package mcpschema

import (
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
)

// Version is the revision this package checks messages of.
const Version = "2026-07-28"

//go:embed schema.json
var schemaJSON []byte

var (
	rootOnce sync.Once
	root     jsonschema.Schema
	rootErr  error
	rawDefs  map[string]json.RawMessage // the definitions' text, for their references
	refRE    = regexp.MustCompile(`"\$ref":\s*"#/\$defs/([^"]+)"`)

	mu       sync.Mutex
	resolved = map[string]*jsonschema.Resolved{}
)

// definition returns the schema's definition name, resolved.
func definition(name string) (*jsonschema.Resolved, error) {
	rootOnce.Do(func() {
		var raw struct {
			Defs map[string]json.RawMessage `json:"$defs"`
		}
		if rootErr = json.Unmarshal(schemaJSON, &raw); rootErr == nil {
			rawDefs = raw.Defs
			rootErr = json.Unmarshal(schemaJSON, &root)
		}
	})
	if rootErr != nil {
		return nil, fmt.Errorf("reading the embedded schema.json: %w", rootErr)
	}
	mu.Lock()
	defer mu.Unlock()
	if rs, ok := resolved[name]; ok {
		return rs, nil
	}
	if _, ok := root.Defs[name]; !ok {
		return nil, fmt.Errorf("the schema has no definition %q", name)
	}
	// Only the definitions name refers to, directly or not: resolving
	// walks every definition it is given.
	defs := map[string]*jsonschema.Schema{}
	for todo := []string{name}; len(todo) > 0; {
		n := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		if defs[n] != nil {
			continue
		}
		d, ok := root.Defs[n]
		if !ok {
			return nil, fmt.Errorf("the schema's definition %s refers to %s, which it lacks", name, n)
		}
		defs[n] = d
		for _, ref := range refRE.FindAllSubmatch(rawDefs[n], -1) {
			todo = append(todo, string(ref[1]))
		}
	}
	s := &jsonschema.Schema{Schema: root.Schema, Ref: "#/$defs/" + name, Defs: defs}
	rs, err := s.Resolve(nil)
	if err != nil {
		return nil, fmt.Errorf("resolving %s: %w", name, err)
	}
	resolved[name] = rs
	return rs, nil
}

// Definitions returns the names of the schema's definitions.
func Definitions() []string {
	definition("Result") // loads the root
	var names []string
	for name := range root.Defs {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// CheckDefinition validates the JSON value v against the schema's
// definition name.
func CheckDefinition(name string, v []byte) error {
	var instance any
	if err := json.Unmarshal(v, &instance); err != nil {
		return fmt.Errorf("not JSON: %w", err)
	}
	return checkValue(name, instance)
}

func checkValue(name string, instance any) error {
	rs, err := definition(name)
	if err != nil {
		return err
	}
	if err := rs.Validate(instance); err != nil {
		return fmt.Errorf("not a valid %s: %w", name, err)
	}
	return nil
}

// Results names the definition of the result of each request method of
// the revision.
var Results = map[string]string{
	"server/discover":          "DiscoverResult",
	"tools/list":               "ListToolsResult",
	"tools/call":               "CallToolResult",
	"prompts/list":             "ListPromptsResult",
	"prompts/get":              "GetPromptResult",
	"resources/list":           "ListResourcesResult",
	"resources/templates/list": "ListResourceTemplatesResult",
	"resources/read":           "ReadResourceResult",
	"subscriptions/listen":     "SubscriptionsListenResult",
	"completion/complete":      "CompleteResult",
}

// InputRequiredMethods are the methods a server may answer with
// resultType "input_required".
var InputRequiredMethods = []string{"tools/call", "prompts/get", "resources/read"}

// Notifications names the definition of each notification a server sends.
var Notifications = map[string]string{
	"notifications/cancelled":                  "CancelledNotification",
	"notifications/progress":                   "ProgressNotification",
	"notifications/message":                    "LoggingMessageNotification",
	"notifications/subscriptions/acknowledged": "SubscriptionsAcknowledgedNotification",
	"notifications/tools/list_changed":         "ToolListChangedNotification",
	"notifications/prompts/list_changed":       "PromptListChangedNotification",
	"notifications/resources/list_changed":     "ResourceListChangedNotification",
	"notifications/resources/updated":          "ResourceUpdatedNotification",
}

// errorDef names the definition of an error code: either a whole error
// response (envelope) or the error object.
type errorDef struct {
	name     string
	envelope bool
}

var errorDefs = map[int]errorDef{
	-32020: {"HeaderMismatchError", true},
	-32021: {"MissingRequiredClientCapabilityError", true},
	-32022: {"UnsupportedProtocolVersionError", true},
	-32700: {"ParseError", false},
	-32600: {"InvalidRequestError", false},
	-32601: {"MethodNotFoundError", false},
	-32602: {"InvalidParamsError", false},
	-32603: {"InternalError", false},
}

// Message is what Check found a message to be.
type Message struct {
	// Kind is "result", "error" or "notification".
	Kind string
	// Method is the notification's method, or the method of the request a
	// response answers.
	Method string
	// ID is the response's id, as JSON ("" for a notification).
	ID string
	// ResultType is a result's resultType.
	ResultType string
	// Code is an error's code.
	Code int
	// Meta is the _meta of the result or of the notification's params.
	Meta map[string]any
	// Value is the whole message, decoded.
	Value map[string]any
}

// Label names the message for counts: "tools/call input_required",
// "tools/call error -32602", "notifications/progress".
func (m *Message) Label() string {
	switch m.Kind {
	case "result":
		return m.Method + " " + m.ResultType
	case "error":
		return fmt.Sprintf("%s error %d", m.Method, m.Code)
	}
	return m.Method
}

// Check checks one message a server sent at 2026-07-28: method is the
// method of the request the message answers, or "" when it answers none
// (a notification, or an error to a request that could not be read). It
// returns what the message is, and an error when it is not valid.
func Check(method string, message []byte) (*Message, error) {
	var v map[string]any
	if err := json.Unmarshal(message, &v); err != nil {
		return nil, fmt.Errorf("not a JSON object: %w", err)
	}
	m := &Message{Method: method, Value: v}
	if id, ok := v["id"]; ok {
		b, _ := json.Marshal(id)
		m.ID = string(b)
	}
	if v["jsonrpc"] != "2.0" {
		return m, fmt.Errorf(`jsonrpc is %v, want "2.0"`, v["jsonrpc"])
	}
	_, hasResult := v["result"]
	_, hasError := v["error"]
	switch name, isMethod := v["method"].(string); {
	case isMethod && m.ID != "":
		return m, fmt.Errorf("the server sent a request (%s): servers send none at %s; input requests go in input_required results", name, Version)
	case isMethod:
		m.Kind, m.Method = "notification", name
		m.Meta = metaOf(v["params"])
		def, ok := Notifications[name]
		if !ok {
			return m, fmt.Errorf("the revision defines no server notification %q", name)
		}
		return m, checkValue(def, v)
	case hasResult && hasError:
		return m, errors.New("a response with both result and error")
	case hasError:
		m.Kind = "error"
		return m, checkError(m, v)
	case hasResult:
		m.Kind = "result"
		return m, checkResult(m, method, v)
	}
	return m, errors.New("neither a notification nor a response (no method, result or error)")
}

func metaOf(v any) map[string]any {
	obj, _ := v.(map[string]any)
	meta, _ := obj["_meta"].(map[string]any)
	return meta
}

func checkError(m *Message, v map[string]any) error {
	if err := checkValue("JSONRPCErrorResponse", v); err != nil {
		return err
	}
	obj := v["error"].(map[string]any)
	code, _ := obj["code"].(float64)
	m.Code = int(code)
	def, ok := errorDefs[m.Code]
	switch {
	case !ok:
		return nil // an implementation's own code: JSONRPCErrorResponse is all the schema says
	case def.envelope:
		return checkValue(def.name, v)
	}
	return checkValue(def.name, obj)
}

func checkResult(m *Message, method string, v map[string]any) error {
	if method == "" {
		return errors.New("a result that answers no request")
	}
	def, ok := Results[method]
	if !ok {
		return fmt.Errorf("a result for %q, a method the revision does not define (only an error can answer it)", method)
	}
	if err := checkValue("JSONRPCResultResponse", v); err != nil {
		return err
	}
	result := v["result"].(map[string]any)
	m.Meta, _ = result["_meta"].(map[string]any)
	m.ResultType, _ = result["resultType"].(string)
	switch m.ResultType {
	case "complete":
		return checkValue(def, result)
	case "input_required":
		if !slices.Contains(InputRequiredMethods, method) {
			return fmt.Errorf("an input_required result for %s: only %s may answer one", method, strings.Join(InputRequiredMethods, ", "))
		}
		if result["inputRequests"] == nil && result["requestState"] == nil {
			return errors.New("an input_required result without inputRequests and without requestState")
		}
		return checkValue("InputRequiredResult", result)
	}
	return fmt.Errorf(`resultType %q: want "complete" or "input_required"`, m.ResultType)
}

// Validate checks a message Hangar sent at 2026-07-28 as Check does, and
// that every result carries serverInfo in its _meta (the revision's
// SHOULD, which Hangar keeps); it reports what is wrong with t.Errorf.
func Validate(t testing.TB, method string, message []byte) *Message {
	t.Helper()
	m, err := validate(method, message)
	if err != nil {
		t.Errorf("%s", err)
	}
	return m
}

func validate(method string, message []byte) (*Message, error) {
	m, err := Check(method, message)
	if err == nil && m.Kind == "result" {
		if _, ok := m.Meta["io.modelcontextprotocol/serverInfo"].(map[string]any); !ok {
			err = errors.New("a result without io.modelcontextprotocol/serverInfo in its _meta")
		}
	}
	if err != nil {
		return m, fmt.Errorf("%s (answering %q): %w", clip(message), method, err)
	}
	return m, nil
}

// clip shortens a message for an error.
func clip(b []byte) string {
	const max = 600
	if len(b) > max {
		return string(b[:max]) + "..."
	}
	return string(b)
}
