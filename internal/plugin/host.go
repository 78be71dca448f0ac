package plugin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
)

// Host is the MCP client of the session whose request a call serves, as
// far as host imports need it. The server implements it for each session.
type Host interface {
	CreateMessage(ctx context.Context, params *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error)
	Elicit(ctx context.Context, params *mcp.ElicitParams) (*mcp.ElicitResult, error)
	ListRoots(ctx context.Context) (*mcp.ListRootsResult, error)
	Log(ctx context.Context, params *mcp.LoggingMessageParams) error
	NotifyProgress(ctx context.Context, params *mcp.ProgressNotificationParams) error
	NotifyElicitationComplete(ctx context.Context, params *mcp.ElicitationCompleteParams) error
}

// HostNamespace is the Extism namespace of Hangar's host imports.
const HostNamespace = "extism:host/user"

// ErrNoClient is returned to a plugin that asks for the client when the call
// serves no MCP session (for example `hangar call`).
var ErrNoClient = errors.New("no MCP client is attached to this call")

var (
	ptr  = []api.ValueType{api.ValueTypeI64} // an offset in the Extism memory
	none = []api.ValueType{}
)

// hostFunctions are Hangar's imports, in HostNamespace.
func (p *Plugin) hostFunctions() []hostFunc {
	return []hostFunc{
		p.request("create_message", ptr, p.createMessage, failure),
		p.request("create_elicitation", ptr, p.createElicitation, elicitFailure),
		p.request("list_roots", none, p.listRoots, listRootsFailure),
		p.request("ask_client", ptr, p.askClient, failure),
		p.notify("notify_logging_message", ptr, p.notifyLog),
		p.notify("notify_progress", ptr, p.notifyProgress),
		p.notify("notify_resource_updated", ptr, p.notifyResourceUpdated),
		p.notify("notify_url_elicitation_completed", ptr, p.notifyElicitationComplete),
		p.listChanged("notify_tool_list_changed", ToolList),
		p.listChanged("notify_resource_list_changed", ResourceList),
		p.listChanged("notify_prompt_list_changed", PromptList),
	}
}

// askingImports are the imports of HostNamespace that wait for the
// client's answer (request's, above): only a call of a module that
// imports one can ask its client for input (AsksClient).
var askingImports = []string{"create_message", "create_elicitation", "list_roots", "ask_client"}

// importsAsking reports whether compiled imports one of askingImports.
func importsAsking(compiled wazero.CompiledModule) bool {
	for _, f := range compiled.ImportedFunctions() {
		if mod, name, ok := f.Import(); ok && mod == HostNamespace && slices.Contains(askingImports, name) {
			return true
		}
	}
	return false
}

// AsksClient reports whether a call of the plugin can ask its client for
// input (sampling, elicitation, roots): whether its module imports one of
// the host functions that do. A call of a plugin that cannot is never
// parked for the client (package mrtr runs it as a plain call).
func (p *Plugin) AsksClient() bool { return p.asks }

// request defines an import that returns a JSON document: its result, or
// fail's document with the error message when it fails.
func (p *Plugin) request(name string, params []api.ValueType, fn func(ctx context.Context, s *callState, in []byte) (any, error), fail func(msg string) any) hostFunc {
	return hostFunc{name, params, ptr, func(ctx context.Context, stack []uint64) {
		var out any
		err := runImport(ctx, len(params) > 0, stack, func(s *callState, in []byte) (err error) {
			out, err = fn(ctx, s, in)
			return err
		})
		if err != nil {
			p.log.Debug("host import failed", "import", name, "error", err)
			out = fail(err.Error())
		}
		b, err := json.Marshal(out)
		if err != nil {
			b, _ = json.Marshal(fail("encoding result: " + err.Error()))
		}
		off := kernelOf(ctx).writeBlock(b)
		if off == 0 {
			// The plugin's memory is exhausted; it reads offset 0 as no result.
			p.log.Warn("host import could not write its result: the plugin's Extism memory is full", "import", name, "bytes", len(b))
		}
		stack[0] = off
	}}
}

// notify defines an import that returns nothing. Failures are logged: a
// notification never fails the plugin.
func (p *Plugin) notify(name string, params []api.ValueType, fn func(ctx context.Context, s *callState, in []byte) error) hostFunc {
	return hostFunc{name, params, none, func(ctx context.Context, stack []uint64) {
		err := runImport(ctx, len(params) > 0, stack, func(s *callState, in []byte) error {
			return fn(ctx, s, in)
		})
		if err != nil {
			p.log.Warn("host import failed", "import", name, "error", err)
		}
	}}
}

// runImport runs the body of a host import for the call in ctx: it reads
// the import's input (at stack[0], when it takes one) and turns a panic into
// an error.
func runImport(ctx context.Context, hasInput bool, stack []uint64, body func(s *callState, in []byte) error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("internal error: %v", r)
		}
	}()
	s := stateFrom(ctx)
	if s == nil {
		return errors.New("host import called outside a call")
	}
	var in []byte
	if hasInput {
		if in, err = kernelOf(ctx).readBlock(stack[0]); err != nil {
			return fmt.Errorf("reading input: %w", err)
		}
	}
	return body(s, in)
}

func decodeInput(in []byte, v any) error {
	if err := json.Unmarshal(in, v); err != nil {
		return fmt.Errorf("invalid input: %w", jsonError(err))
	}
	return nil
}

// jsonError rewrites a type error of encoding/json, "json: cannot
// unmarshal string into Go struct field CreateMessageParams.maxTokens of
// type int64", in the terms of the JSON document: "maxTokens: expected an
// integer, got a string". Other errors are returned as they are.
func jsonError(err error) error {
	var te *json.UnmarshalTypeError
	if !errors.As(err, &te) || te.Type == nil {
		return err
	}
	var want string
	switch te.Type.Kind() {
	case reflect.String:
		want = "a string"
	case reflect.Bool:
		want = "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		want = "an integer"
	case reflect.Float32, reflect.Float64:
		want = "a number"
	case reflect.Slice, reflect.Array:
		want = "an array"
	case reflect.Map, reflect.Struct:
		want = "an object"
	default:
		return err
	}
	got := te.Value
	switch got {
	case "string", "number", "object", "array":
		got = map[string]string{"string": "a string", "number": "a number", "object": "an object", "array": "an array"}[got]
	case "bool":
		got = "a boolean"
	default:
		if strings.HasPrefix(got, "number") {
			got = "the number" + strings.TrimPrefix(got, "number")
		}
	}
	field := te.Field
	if field == "" {
		field = "input"
	}
	return fmt.Errorf("%s: expected %s, got %s", field, want, got)
}

// wait runs fn, which waits for the client, with the call's clock stopped
// and a deadline of the host timeout (or the shorter timeout the plugin
// asked for).
func (p *Plugin) wait(s *callState, timeout time.Duration, fn func(ctx context.Context) (any, error)) (any, error) {
	if s.call.Host == nil {
		return nil, ErrNoClient
	}
	limit := p.opts.Limits.HostTimeout
	if timeout > 0 && timeout < limit {
		limit = timeout
	}
	s.budget.pause()
	defer s.budget.resume()
	ctx, cancel := context.WithTimeout(s, limit)
	defer cancel()
	out, err := fn(ctx)
	// Only a wait that the deadline ended is "no answer": an error the
	// host decided on its own (a cap, a missing capability) stays that
	// error, however late it came. A loaded machine once let a 1 ms
	// deadline pass before a cap refusal, which then read as a timeout.
	if err != nil && errors.Is(err, context.DeadlineExceeded) && errors.Is(ctx.Err(), context.DeadlineExceeded) && s.Err() == nil {
		return nil, fmt.Errorf("no answer from the client within %s", limit)
	}
	return out, err
}

// The outputs of the request imports carry exactly the members of the
// schema's CreateMessageResult, ElicitResult and ListRootsResult: the _meta
// members MCP adds are left out.

type v1CreateMessageResult struct {
	Content    mcp.Content `json:"content"`
	Model      string      `json:"model"`
	Role       mcp.Role    `json:"role"`
	StopReason string      `json:"stopReason,omitempty"`
}

type v1ElicitResult struct {
	Action  string         `json:"action"`
	Content map[string]any `json:"content,omitempty"`
}

type v1Root struct {
	URI  string `json:"uri"`
	Name string `json:"name,omitempty"`
}

type v1ListRootsResult struct {
	Roots []v1Root `json:"roots"`
}

// The answers of the request imports when they fail. An error is a JSON
// object with an "error" member, the message, and, where the schema's output
// type has a neutral value, the members that make it one, so that the
// answer is still a valid output for a plugin that does not look at
// "error": the elicitation was cancelled, the client has no roots. A
// CreateMessageResult has no neutral value (a message with no content or
// model would pass for an answer), so create_message answers the error
// alone. "error" comes first, so that a plugin can tell an error by the
// first bytes of the answer.

func failure(msg string) any {
	return struct {
		Error string `json:"error"`
	}{msg}
}

func elicitFailure(msg string) any {
	return struct {
		Error  string `json:"error"`
		Action string `json:"action"`
	}{msg, "cancel"}
}

func listRootsFailure(msg string) any {
	return struct {
		Error string   `json:"error"`
		Roots []v1Root `json:"roots"`
	}{msg, []v1Root{}}
}

func (p *Plugin) createMessage(_ context.Context, s *callState, in []byte) (any, error) {
	params, err := createMessageParams(in)
	if err != nil {
		return nil, err
	}
	out, err := p.wait(s, 0, func(ctx context.Context) (any, error) {
		return s.call.Host.CreateMessage(ctx, params)
	})
	if err != nil {
		return nil, err
	}
	res, ok := out.(*mcp.CreateMessageResult)
	if !ok || res == nil || res.Content == nil {
		return nil, errors.New("the client answered sampling without content")
	}
	return v1CreateMessageResult{Content: res.Content, Model: res.Model, Role: res.Role, StopReason: res.StopReason}, nil
}

// createMessageParams reads create_message's input, the schema's
// CreateMessageRequestParam, whose messages are read by samplingMessages.
func createMessageParams(in []byte) (*mcp.CreateMessageParams, error) {
	var members map[string]json.RawMessage
	if err := decodeInput(in, &members); err != nil {
		return nil, err
	}
	if members == nil {
		return nil, errors.New("invalid input: expected a CreateMessageRequestParam object, got null")
	}
	messages := members["messages"]
	delete(members, "messages")
	rest, err := json.Marshal(members)
	if err != nil {
		return nil, fmt.Errorf("invalid input: %w", err)
	}
	params := new(mcp.CreateMessageParams)
	if err := decodeInput(rest, params); err != nil {
		return nil, err
	}
	if params.Messages, err = samplingMessages(messages); err != nil {
		return nil, fmt.Errorf("invalid input: %w", err)
	}
	return params, nil
}

// elicitInput is create_elicitation's input: form or URL mode, plus an
// optional timeout in milliseconds.
type elicitInput struct {
	Mode            string          `json:"mode"`
	Message         string          `json:"message"`
	RequestedSchema json.RawMessage `json:"requestedSchema,omitempty"`
	URL             string          `json:"url,omitempty"`
	ElicitationID   string          `json:"elicitationId,omitempty"`
	Timeout         int64           `json:"timeout,omitempty"`
	Meta            mcp.Meta        `json:"_meta,omitempty"`
}

func (p *Plugin) createElicitation(_ context.Context, s *callState, in []byte) (any, error) {
	var e elicitInput
	if err := decodeInput(in, &e); err != nil {
		return nil, err
	}
	params, timeout, err := elicitParams(e)
	if err != nil {
		return nil, err
	}
	out, err := p.wait(s, timeout, func(ctx context.Context) (any, error) {
		return s.call.Host.Elicit(ctx, params)
	})
	if err != nil {
		return nil, err
	}
	res, ok := out.(*mcp.ElicitResult)
	if !ok || res == nil {
		return nil, errors.New("the client answered elicitation with nothing")
	}
	return v1ElicitResult{Action: res.Action, Content: res.Content}, nil
}

// elicitParams returns the MCP elicitation of create_elicitation's input,
// and its timeout (0: none).
func elicitParams(e elicitInput) (*mcp.ElicitParams, time.Duration, error) {
	params := &mcp.ElicitParams{Meta: e.Meta, Mode: e.Mode, Message: e.Message}
	switch e.Mode {
	case "", "form":
		if len(e.RequestedSchema) == 0 {
			return nil, 0, errors.New("form elicitation needs a requestedSchema")
		}
		params.Mode = "form"
		params.RequestedSchema = mcpRequestedSchema(e.RequestedSchema)
	case "url":
		if e.URL == "" || e.ElicitationID == "" {
			return nil, 0, errors.New("url elicitation needs url and elicitationId")
		}
		params.URL = e.URL
		params.ElicitationID = e.ElicitationID
	default:
		return nil, 0, fmt.Errorf("unknown elicitation mode %q (want \"form\" or \"url\")", e.Mode)
	}
	if e.Timeout < 0 {
		return nil, 0, errors.New("timeout must not be negative")
	}
	return params, time.Duration(e.Timeout) * time.Millisecond, nil
}

// mcpRequestedSchema returns an elicitation's requestedSchema as MCP has
// it. The plugin schema's StringSchemaFormat names one format "date_time",
// which MCP names "date-time"; a schema that is not an object of property
// schemas is passed on as it is.
func mcpRequestedSchema(raw json.RawMessage) json.RawMessage {
	var s map[string]json.RawMessage
	var props map[string]map[string]json.RawMessage
	if json.Unmarshal(raw, &s) != nil || json.Unmarshal(s["properties"], &props) != nil {
		return raw
	}
	changed := false
	for _, prop := range props {
		if string(prop["format"]) == `"date_time"` {
			prop["format"] = json.RawMessage(`"date-time"`)
			changed = true
		}
	}
	if !changed {
		return raw
	}
	b, err := json.Marshal(props)
	if err != nil {
		return raw
	}
	s["properties"] = b
	if b, err = json.Marshal(s); err != nil {
		return raw
	}
	return b
}

func (p *Plugin) listRoots(_ context.Context, s *callState, _ []byte) (any, error) {
	out, err := p.wait(s, 0, func(ctx context.Context) (any, error) {
		return s.call.Host.ListRoots(ctx)
	})
	if err != nil {
		return nil, err
	}
	res, ok := out.(*mcp.ListRootsResult)
	if !ok || res == nil {
		return nil, errors.New("the client answered roots/list with nothing")
	}
	roots := make([]v1Root, 0, len(res.Roots))
	for _, r := range res.Roots {
		if r != nil {
			roots = append(roots, v1Root{URI: r.URI, Name: r.Name})
		}
	}
	return v1ListRootsResult{Roots: roots}, nil
}

// notifyCtx is the context for a notification to the client: the caller's,
// so that the SDK relates it to the request being served, and so that a
// queued notification is still sent after the plugin's run returned (see
// callState.caller).
func notifyCtx(s *callState) context.Context { return s.caller }

func (p *Plugin) notifyLog(_ context.Context, s *callState, in []byte) error {
	var params mcp.LoggingMessageParams
	if err := decodeInput(in, &params); err != nil {
		return err
	}
	if !validLevel(params.Level) {
		return fmt.Errorf("unknown logging level %q", params.Level)
	}
	if s.call.Host == nil {
		p.log.Info("plugin log message", "level", params.Level, "logger", params.Logger, "data", params.Data)
		return nil
	}
	return s.call.Host.Log(notifyCtx(s), &params)
}

func validLevel(l mcp.LoggingLevel) bool {
	switch l {
	case "debug", "info", "notice", "warning", "error", "critical", "alert", "emergency":
		return true
	}
	return false
}

func (p *Plugin) notifyProgress(_ context.Context, s *callState, in []byte) error {
	var params mcp.ProgressNotificationParams
	if err := decodeInput(in, &params); err != nil {
		return err
	}
	if s.call.Host == nil {
		return nil // no client: nobody to tell
	}
	token, ok := progressToken(params.ProgressToken, s.call.Meta["progressToken"])
	if !ok {
		// MCP allows progress only under the token of a request in
		// progress: the client would refuse any other, as unknown.
		n := p.progressDropped.Add(1)
		p.log.Debug("progress notification dropped: not under the token of the call", "token", params.ProgressToken,
			"call_token", s.call.Meta["progressToken"], "dropped", n)
		return nil
	}
	params.ProgressToken = token
	return s.call.Host.NotifyProgress(notifyCtx(s), &params)
}

// progressToken returns the token under which a plugin's progress
// notification reaches the client, which is always the token of the call
// it serves, and whether it may: a plugin may give no token (null or
// absent), or the call's as the client sent it or as the schema has it, a
// string ("3" for the client's 3: ProgressNotificationParam's
// progressToken is a string, MCP's may be a number). Any other token, ""
// (which bindings that always write the member send when the call has
// none) or one of the plugin's own, and any progress of a call without a
// token, may not.
func progressToken(plugin, call any) (any, bool) {
	if call == nil {
		return nil, false
	}
	if plugin == nil {
		return call, true
	}
	c, err := json.Marshal(call)
	if err != nil {
		return nil, false
	}
	if b, err := json.Marshal(plugin); err == nil && bytes.Equal(b, c) {
		return call, true
	}
	if s, ok := plugin.(string); ok {
		if _, isString := call.(string); !isString && s == string(c) {
			return call, true
		}
	}
	return nil, false
}

// ProgressDropped reports how many progress notifications of the plugin
// were dropped because they were not under the token of the call that sent
// them (see progressToken).
func (p *Plugin) ProgressDropped() uint64 { return p.progressDropped.Load() }

func (p *Plugin) notifyElicitationComplete(_ context.Context, s *callState, in []byte) error {
	var params mcp.ElicitationCompleteParams
	if err := decodeInput(in, &params); err != nil {
		return err
	}
	if params.ElicitationID == "" {
		return errors.New("elicitationId is required")
	}
	if s.call.Host == nil {
		return ErrNoClient
	}
	return s.call.Host.NotifyElicitationComplete(notifyCtx(s), &params)
}

func (p *Plugin) notifyResourceUpdated(_ context.Context, _ *callState, in []byte) error {
	var params struct {
		URI string `json:"uri"`
	}
	if err := decodeInput(in, &params); err != nil {
		return err
	}
	if params.URI == "" {
		return errors.New("uri is required")
	}
	p.emit(func(ev Events) { ev.ResourceUpdated(params.URI) })
	return nil
}

// listChanged defines the import that reports a change of the plugin's
// list of kind. It only records the kind in the running call: when the call
// returns, the lists it changed are read again on its instance (see
// Plugin.invokeWithin), once however many notifications it sent. The calls
// that re-read lists report nothing, so that a refresh never starts
// another.
//
// There is always a call: a module's initialization (Go's init functions,
// _initialize) runs at the start of the instance's first call, as in
// Extism, and start functions are not run.
func (p *Plugin) listChanged(name string, kind ListKind) hostFunc {
	return hostFunc{name, none, none, func(ctx context.Context, _ []uint64) {
		if s := stateFrom(ctx); s != nil && !s.refresh {
			s.changed |= kind.Set()
		}
	}}
}
