package pdk

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"
)

func TestCreateMessage(t *testing.T) {
	h := &fakeHost{answers: map[string]string{
		importCreateMessage: `{"role":"assistant","content":{"type":"text","text":"hi"},"model":"m"}`,
	}}
	ctx := &Context{Meta: Meta{}, host: h}
	res, err := ctx.CreateMessage(&CreateMessageParams{
		Messages:  []*SamplingMessage{{Role: RoleUser, Content: &TextContent{Text: "ping"}}},
		MaxTokens: 100,
	})
	if err != nil {
		t.Fatal(err)
	}
	if text, ok := res.Content.(*TextContent); !ok || text.Text != "hi" || res.Model != "m" {
		t.Errorf("result = %+v", res)
	}
	want := hostCall{importCreateMessage, `{"messages":[{"role":"user","content":{"type":"text","text":"ping"}}],"maxTokens":100}`}
	if len(h.calls) != 1 || h.calls[0] != want {
		t.Errorf("calls = %v, want %v", h.calls, want)
	}
}

func TestHostErrors(t *testing.T) {
	tests := []struct {
		answer string
		want   string
	}{
		{`{"error":"client does not support sampling"}`, "pdk: create_message: client does not support sampling"},
		{`{"error":{"code":-1}}`, `pdk: create_message: {"code":-1}`},
		{``, "pdk: create_message: empty answer"},
	}
	for _, tt := range tests {
		ctx := &Context{host: &fakeHost{answers: map[string]string{importCreateMessage: tt.answer}}}
		_, err := ctx.CreateMessage(&CreateMessageParams{MaxTokens: 1})
		var herr *HostError
		if !errors.As(err, &herr) || err.Error() != tt.want {
			t.Errorf("answer %s: error %v, want HostError %q", tt.answer, err, tt.want)
		}
	}
	ctx := &Context{host: &fakeHost{answers: map[string]string{importListRoots: `[1]`}}}
	if _, err := ctx.ListRoots(); err == nil {
		t.Error("malformed answer accepted")
	}

	// Hangar's failing create_elicitation and list_roots answer a neutral
	// value with the error, which is still an error.
	ctx = &Context{host: &fakeHost{answers: map[string]string{
		importCreateElicitation: `{"error":"no elicitation","action":"cancel"}`,
		importListRoots:         `{"roots":[],"error":"no roots"}`,
	}}}
	var herr *HostError
	if res, err := ctx.Elicit(&ElicitParams{Message: "m"}); !errors.As(err, &herr) || herr.Import != importCreateElicitation || herr.Message != "no elicitation" {
		t.Errorf("Elicit = %+v, %v; want the HostError", res, err)
	}
	if res, err := ctx.ElicitURL(&ElicitURLParams{URL: "https://example.com", ElicitationID: "e"}); !errors.As(err, &herr) || herr.Message != "no elicitation" {
		t.Errorf("ElicitURL = %+v, %v; want the HostError", res, err)
	}
	if res, err := ctx.ListRoots(); !errors.As(err, &herr) || herr.Import != importListRoots || herr.Message != "no roots" {
		t.Errorf("ListRoots = %+v, %v; want the HostError", res, err)
	}
}

func TestElicit(t *testing.T) {
	h := &fakeHost{answers: map[string]string{importCreateElicitation: `{"action":"accept","content":{"n":1}}`}}
	ctx := &Context{host: h}
	res, err := ctx.Elicit(&ElicitParams{
		Message:         "Name?",
		RequestedSchema: map[string]any{"type": "object"},
		Timeout:         1500*time.Millisecond + time.Microsecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Action != ElicitAccept || res.Content["n"] != 1.0 {
		t.Errorf("result = %+v", res)
	}
	if _, err := ctx.Elicit(&ElicitParams{Message: "Ok?"}); err != nil {
		t.Fatal(err)
	}
	if _, err := ctx.ElicitURL(&ElicitURLParams{Message: "Sign in", URL: "https://example.com", ElicitationID: "e1"}); err != nil {
		t.Fatal(err)
	}
	want := []hostCall{
		{importCreateElicitation, `{"mode":"form","message":"Name?","requestedSchema":{"type":"object"},"timeout":1501}`},
		{importCreateElicitation, `{"mode":"form","message":"Ok?","requestedSchema":{"properties":{},"type":"object"}}`},
		{importCreateElicitation, `{"mode":"url","message":"Sign in","url":"https://example.com","elicitationId":"e1"}`},
	}
	if len(h.calls) != len(want) {
		t.Fatalf("calls = %v", h.calls)
	}
	for i := range want {
		if h.calls[i] != want[i] {
			t.Errorf("call %d = %v\nwant %v", i, h.calls[i], want[i])
		}
	}
	if _, err := ctx.ElicitURL(&ElicitURLParams{URL: "https://example.com"}); err == nil {
		t.Error("ElicitURL without id accepted")
	}
}

func TestProgressUsesRequestToken(t *testing.T) {
	h := &fakeHost{}
	withToken := &Context{Meta: Meta{"progressToken": "t1"}, host: h}
	params := &ProgressParams{Progress: 50, Total: 100}
	if err := withToken.Progress(params); err != nil {
		t.Fatal(err)
	}
	if params.ProgressToken != nil {
		t.Error("Progress modified its params")
	}
	if err := withToken.Progress(&ProgressParams{ProgressToken: 9, Progress: 1, Message: "m"}); err != nil {
		t.Fatal(err)
	}
	without := &Context{Meta: Meta{}, host: h}
	if err := without.Progress(&ProgressParams{Progress: 1}); err != nil {
		t.Fatal(err)
	}
	// A numeric token, as a request's _meta decodes it, is sent as the
	// schema types it: a string.
	numeric := &Context{Meta: Meta{"progressToken": float64(3)}, host: h}
	if err := numeric.Progress(&ProgressParams{Progress: 2}); err != nil {
		t.Fatal(err)
	}
	if err := numeric.Progress(&ProgressParams{ProgressToken: func() {}, Progress: 2}); err == nil {
		t.Error("unencodable token accepted")
	}
	want := []hostCall{
		{importNotifyProgress, `{"progressToken":"t1","progress":50,"total":100}`},
		{importNotifyProgress, `{"progressToken":"9","progress":1,"message":"m"}`},
		{importNotifyProgress, `{"progressToken":"3","progress":2}`},
	}
	if !slices.Equal(h.calls, want) {
		t.Errorf("calls = %v\nwant %v", h.calls, want)
	}
}

func TestNotifications(t *testing.T) {
	h := &fakeHost{}
	ctx := &Context{host: h}
	if err := ctx.Logf(LevelWarning, "disk %d%% full", 91); err != nil {
		t.Fatal(err)
	}
	if err := ctx.Log(&LoggingMessageParams{Level: LevelDebug, Logger: "db", Data: map[string]int{"rows": 3}}); err != nil {
		t.Fatal(err)
	}
	if err := ctx.Log(&LoggingMessageParams{Level: LevelInfo, Data: func() {}}); err == nil {
		t.Error("unencodable log data accepted")
	}
	// The schema's data is an object: other values are wrapped.
	for _, data := range []any{nil, map[string]any(nil), []int{1, 2}, 7, json.RawMessage(` "raw" `)} {
		if err := ctx.Log(&LoggingMessageParams{Level: LevelInfo, Data: data}); err != nil {
			t.Fatal(err)
		}
	}
	ctx.NotifyToolListChanged()
	ctx.NotifyResourceListChanged()
	ctx.NotifyPromptListChanged()
	ctx.NotifyResourceUpdated("test://r")
	ctx.NotifyURLElicitationCompleted("e1")
	want := []hostCall{
		{importNotifyLoggingMessage, `{"level":"warning","data":{"message":"disk 91% full"}}`},
		{importNotifyLoggingMessage, `{"level":"debug","logger":"db","data":{"rows":3}}`},
		{importNotifyLoggingMessage, `{"level":"info","data":{}}`},
		{importNotifyLoggingMessage, `{"level":"info","data":{}}`},
		{importNotifyLoggingMessage, `{"level":"info","data":{"message":[1,2]}}`},
		{importNotifyLoggingMessage, `{"level":"info","data":{"message":7}}`},
		{importNotifyLoggingMessage, `{"level":"info","data":{"message":"raw"}}`},
		{importNotifyToolListChanged, ""},
		{importNotifyResourceListChanged, ""},
		{importNotifyPromptListChanged, ""},
		{importNotifyResourceUpdated, `{"uri":"test://r"}`},
		{importNotifyURLElicitationDone, `{"elicitationId":"e1"}`},
	}
	if len(h.calls) != len(want) {
		t.Fatalf("calls = %v", h.calls)
	}
	for i := range want {
		if h.calls[i] != want[i] {
			t.Errorf("call %d = %v, want %v", i, h.calls[i], want[i])
		}
	}
}

func TestNoHostOutsideWasm(t *testing.T) {
	ctx := &Context{}
	if _, err := ctx.ListRoots(); !errors.Is(err, ErrNoHost) {
		t.Errorf("ListRoots error = %v, want ErrNoHost", err)
	}
	if _, ok := Config("greeting"); ok {
		t.Error("Config found a value without a host")
	}
}

func TestWrapError(t *testing.T) {
	inner := &HostError{Import: "list_roots", Message: "no roots"}
	err := wrapError(inner, "pdk: decoding list_roots answer")
	if want := fmt.Errorf("pdk: decoding list_roots answer: %w", inner); err.Error() != want.Error() {
		t.Errorf("wrapError = %q, fmt.Errorf: %q", err, want)
	}
	var herr *HostError
	if !errors.As(err, &herr) || herr != inner {
		t.Errorf("errors.As(%v) = %v", err, herr)
	}
	if !errors.Is(wrapError(ErrNoHost, "x"), ErrNoHost) {
		t.Error("wrapError(ErrNoHost) is not ErrNoHost")
	}
}
