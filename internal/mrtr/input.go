package mrtr

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The methods of the requests a server may put in inputRequests.
const (
	MethodElicit        = "elicitation/create"
	MethodCreateMessage = "sampling/createMessage"
	MethodListRoots     = "roots/list"
)

// kind is the kind of an input request, as far as capabilities and the
// shape of the answer go.
type kind int

const (
	kindForm     kind = iota // form elicitation
	kindURL                  // URL elicitation
	kindSampling             // sampling/createMessage
	kindRoots                // roots/list
)

// keyPrefix starts the inputRequests keys of each kind; a number unique
// within the call follows ("elicitation-1").
func (k kind) keyPrefix() string {
	switch k {
	case kindSampling:
		return "sampling"
	case kindRoots:
		return "roots"
	}
	return "elicitation"
}

// expected names what a request of kind k must be answered with.
func (k kind) expected() string {
	switch k {
	case kindSampling:
		return "a CreateMessageResult"
	case kindRoots:
		return "a ListRootsResult"
	}
	return "an ElicitResult"
}

// input is one input request of a call, waiting for its answer.
type input struct {
	key     string
	kind    kind
	request json.RawMessage      // {"method": ..., "params": ...}, as sent
	schema  *jsonschema.Resolved // form elicitation: the requested schema, if it resolves
	answer  chan json.RawMessage // receives the validated answer; buffered 1
}

// DecodeCapabilities decodes the client capabilities of a request's _meta
// (the value of io.modelcontextprotocol/clientCapabilities), filling
// RootsV2 from "roots" as the go-sdk does: decoding into
// mcp.ClientCapabilities with encoding/json leaves RootsV2 nil. Empty or
// null raw is no capabilities.
func DecodeCapabilities(raw json.RawMessage) (*mcp.ClientCapabilities, error) {
	caps := &mcp.ClientCapabilities{}
	if r := bytes.TrimSpace(raw); len(r) == 0 || string(r) == "null" {
		return caps, nil
	}
	if err := json.Unmarshal(raw, caps); err != nil {
		return nil, fmt.Errorf("%w: client capabilities: %v", ErrInvalidParams, err)
	}
	var roots struct {
		Roots *mcp.RootCapabilities `json:"roots"`
	}
	if err := json.Unmarshal(raw, &roots); err != nil {
		return nil, fmt.Errorf("%w: client capabilities: roots: %v", ErrInvalidParams, err)
	}
	caps.RootsV2 = roots.Roots
	return caps, nil
}

// missingCapability returns the error to answer when a client with caps
// cannot take an input request of kind k, or nil when it can.
func missingCapability(k kind, caps *mcp.ClientCapabilities) *CapabilityError {
	if caps == nil {
		caps = &mcp.ClientCapabilities{}
	}
	empty := map[string]any{}
	switch k {
	case kindForm:
		// An elicitation capability that names no mode means form.
		if e := caps.Elicitation; e == nil {
			return &CapabilityError{"elicitation", map[string]any{"elicitation": empty}}
		} else if e.Form == nil && e.URL != nil {
			return &CapabilityError{"form elicitation", map[string]any{"elicitation": map[string]any{"form": empty}}}
		}
	case kindURL:
		if e := caps.Elicitation; e == nil || e.URL == nil {
			return &CapabilityError{"url elicitation", map[string]any{"elicitation": map[string]any{"url": empty}}}
		}
	case kindSampling:
		if caps.Sampling == nil {
			return &CapabilityError{"sampling", map[string]any{"sampling": empty}}
		}
	case kindRoots:
		if caps.RootsV2 == nil {
			return &CapabilityError{"roots", map[string]any{"roots": empty}}
		}
	}
	return nil
}

// elicitRequest returns the kind and the 2026 input request for a
// plugin's elicitation: form mode with mode "form", message and
// requestedSchema; URL mode with mode, message and url. The elicitation id
// a plugin gives a URL elicitation is left out: 2026-07-28 removed it, the
// client reports the outcome by retrying.
func elicitRequest(p *mcp.ElicitParams) (kind, json.RawMessage, *jsonschema.Resolved, error) {
	mode := p.Mode
	if mode == "" {
		mode = "form"
		if p.URL != "" {
			mode = "url"
		}
	}
	switch mode {
	case "form":
		schema := p.RequestedSchema
		if schema == nil {
			schema = map[string]any{"type": "object", "properties": map[string]any{}}
		}
		rawSchema, err := json.Marshal(schema)
		if err != nil {
			return 0, nil, nil, fmt.Errorf("encoding requestedSchema: %w", err)
		}
		req, err := json.Marshal(map[string]any{"method": MethodElicit, "params": map[string]any{
			"mode": "form", "message": p.Message, "requestedSchema": json.RawMessage(rawSchema),
		}})
		return kindForm, req, resolveSchema(rawSchema), err
	case "url":
		req, err := json.Marshal(map[string]any{"method": MethodElicit, "params": map[string]any{
			"mode": "url", "message": p.Message, "url": p.URL,
		}})
		return kindURL, req, nil, err
	}
	return 0, nil, nil, fmt.Errorf("unknown elicitation mode %q (want \"form\" or \"url\")", mode)
}

// resolveSchema resolves a form's requested schema for validating answers,
// or returns nil if it does not resolve (the plugin's mistake: its answers
// are then checked for their shape only).
func resolveSchema(raw json.RawMessage) *jsonschema.Resolved {
	var s jsonschema.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil
	}
	r, err := s.Resolve(nil)
	if err != nil {
		return nil
	}
	return r
}

// samplingRequest returns the 2026 input request for a plugin's sampling
// request: its parameters without _meta (which 2026 sampling parameters do
// not have), and without includeContext "thisServer" or "allServers"
// unless the client declared sampling.context (those values are
// deprecated and the revision says not to send them otherwise).
func samplingRequest(p *mcp.CreateMessageParams, caps *mcp.ClientCapabilities) (json.RawMessage, error) {
	b, err := json.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("encoding sampling request: %w", err)
	}
	var params map[string]json.RawMessage
	if err := json.Unmarshal(b, &params); err != nil {
		return nil, fmt.Errorf("encoding sampling request: %w", err)
	}
	delete(params, "_meta")
	if ic := string(params["includeContext"]); ic != "" && ic != `"none"` && (caps == nil || caps.Sampling == nil || caps.Sampling.Context == nil) {
		delete(params, "includeContext")
	}
	return json.Marshal(map[string]any{"method": MethodCreateMessage, "params": params})
}

// rootsRequest is the input request for roots/list. It has no parameters,
// but carries an empty params object: the go-sdk (v1.8.0) fails to decode
// an input request without params, in its client as in InputRequestMap.
var rootsRequest = json.RawMessage(`{"method":"roots/list","params":{}}`)

// check validates an answer to in and returns it in the form the plugin
// layer decodes (see decodeAnswer), or a *ResponseError.
func (in *input) check(raw json.RawMessage) (json.RawMessage, error) {
	fail := func(format string, args ...any) (json.RawMessage, error) {
		return nil, &ResponseError{Key: in.key, Expected: in.kind.expected(), Problem: fmt.Sprintf(format, args...)}
	}
	v, err := decodeJSON(raw)
	if err != nil {
		return fail("not valid JSON: %v", err)
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return fail("the answer is not a JSON object")
	}
	switch in.kind {
	case kindForm, kindURL:
		return in.checkElicit(obj, fail)
	case kindSampling:
		return checkSampling(obj, fail)
	default:
		return checkRoots(obj, fail)
	}
}

// looksLike names the result type obj resembles, for error messages.
func looksLike(obj map[string]any) string {
	switch {
	case obj["action"] != nil:
		return "; the answer looks like an ElicitResult"
	case obj["role"] != nil || obj["model"] != nil:
		return "; the answer looks like a CreateMessageResult"
	case obj["roots"] != nil:
		return "; the answer looks like a ListRootsResult"
	}
	return ""
}

type failFunc func(format string, args ...any) (json.RawMessage, error)

func (in *input) checkElicit(obj map[string]any, fail failFunc) (json.RawMessage, error) {
	action, ok := obj["action"].(string)
	if !ok {
		return fail("action must be \"accept\", \"decline\" or \"cancel\"%s", looksLike(obj))
	}
	switch action {
	case "accept", "decline", "cancel":
	default:
		return fail("action %q is not \"accept\", \"decline\" or \"cancel\"", action)
	}
	out := map[string]any{"action": action}
	// content counts only for a form's "accept"; elsewhere the revision
	// has none, and the plugin gets none.
	if action != "accept" || in.kind != kindForm {
		return mustJSON(out), nil
	}
	content := map[string]any{}
	if c, present := obj["content"]; present && c != nil {
		m, ok := c.(map[string]any)
		if !ok {
			return fail("content must be an object of form values")
		}
		for name, val := range m {
			if !formValue(val) {
				return fail("content[%q] must be a string, a number, a boolean or an array of strings", name)
			}
		}
		content = m
	}
	if in.schema != nil {
		if err := in.schema.Validate(plainValues(content)); err != nil {
			return fail("content does not match the requested schema: %v", err)
		}
	}
	if len(content) > 0 {
		out["content"] = content
	}
	return mustJSON(out), nil
}

// formValue reports whether v may be an elicitation form value.
func formValue(v any) bool {
	switch v := v.(type) {
	case string, bool, json.Number:
		return true
	case []any:
		for _, e := range v {
			if _, ok := e.(string); !ok {
				return false
			}
		}
		return true
	}
	return false
}

// plainValues returns content with numbers as float64 and arrays as
// []any of strings, the values the schema validator knows.
func plainValues(content map[string]any) map[string]any {
	out := make(map[string]any, len(content))
	for k, v := range content {
		if n, ok := v.(json.Number); ok {
			f, err := n.Float64()
			if err != nil {
				out[k] = v
				continue
			}
			out[k] = f
			continue
		}
		out[k] = v
	}
	return out
}

func checkSampling(obj map[string]any, fail failFunc) (json.RawMessage, error) {
	role, _ := obj["role"].(string)
	if role != "assistant" && role != "user" {
		return fail("role must be \"assistant\" or \"user\"%s", looksLike(obj))
	}
	model, ok := obj["model"].(string)
	if !ok {
		return fail("model must be a string")
	}
	content := obj["content"]
	if list, ok := content.([]any); ok {
		// The plugin's sampling request has no tools, so the answer is one
		// message; an array of one block is that block.
		if len(list) != 1 {
			return fail("content must be one text, image or audio block, not %d blocks", len(list))
		}
		content = list[0]
	}
	block, ok := content.(map[string]any)
	if !ok {
		return fail("content must be a text, image or audio block")
	}
	switch t, _ := block["type"].(string); t {
	case "text":
		if _, ok := block["text"].(string); !ok {
			return fail("text content needs a text string")
		}
	case "image", "audio":
		if _, ok := block["data"].(string); !ok {
			return fail("%s content needs base64 data", t)
		}
		if _, ok := block["mimeType"].(string); !ok {
			return fail("%s content needs a mimeType", t)
		}
	default:
		return fail("content type %q is not \"text\", \"image\" or \"audio\" (the request offered no tools)", t)
	}
	out := map[string]any{"role": role, "model": model, "content": block}
	if sr, present := obj["stopReason"]; present && sr != nil {
		s, ok := sr.(string)
		if !ok {
			return fail("stopReason must be a string")
		}
		out["stopReason"] = s
	}
	return mustJSON(out), nil
}

func checkRoots(obj map[string]any, fail failFunc) (json.RawMessage, error) {
	list, ok := obj["roots"].([]any)
	if !ok {
		return fail("roots must be an array of roots%s", looksLike(obj))
	}
	roots := make([]map[string]any, 0, len(list))
	for i, r := range list {
		root, ok := r.(map[string]any)
		if !ok {
			return fail("roots[%d] is not an object", i)
		}
		uri, _ := root["uri"].(string)
		if !strings.HasPrefix(uri, "file://") {
			return fail("roots[%d].uri must be a file:// URI", i)
		}
		out := map[string]any{"uri": uri}
		if n, present := root["name"]; present && n != nil {
			name, ok := n.(string)
			if !ok {
				return fail("roots[%d].name must be a string", i)
			}
			out["name"] = name
		}
		roots = append(roots, out)
	}
	return mustJSON(map[string]any{"roots": roots}), nil
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // values decoded from JSON always encode
	}
	return b
}
