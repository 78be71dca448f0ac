package pdk

import (
	"encoding/json"
	"errors"
	"testing"
)

func TestAsk(t *testing.T) {
	h := &fakeHost{answers: map[string]string{importAskClient: `{"answers":{
		"name": {"result": {"action": "accept", "content": {"name": "Ada"}}},
		"greeting": {"result": {"role": "assistant", "content": {"type": "text", "text": "Hi"}, "model": "m"}},
		"roots": {"error": "the client declined"}
	}}`}}
	ctx := &Context{Meta: Meta{}, host: h}
	res, err := ctx.Ask(map[string]*InputRequest{
		"name":     {Elicit: &ElicitParams{Message: "Name?", RequestedSchema: json.RawMessage(`{"type":"object"}`)}},
		"greeting": {CreateMessage: &CreateMessageParams{Messages: []*SamplingMessage{{Role: RoleUser, Content: &TextContent{Text: "Greet"}}}, MaxTokens: 5}},
		"roots":    {ListRoots: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	if r := res["name"]; r.Err != nil || r.Elicit == nil || r.Elicit.Content["name"] != "Ada" {
		t.Errorf("name = %+v", r)
	}
	if r := res["greeting"]; r.Err != nil || r.CreateMessage == nil || r.CreateMessage.Content.(*TextContent).Text != "Hi" {
		t.Errorf("greeting = %+v", r)
	}
	var he *HostError
	if r := res["roots"]; r.ListRoots != nil || !errors.As(r.Err, &he) || he.Message != "the client declined" {
		t.Errorf("roots = %+v", r)
	}
	want := `{"requests":{"greeting":{"method":"sampling/createMessage","params":{"messages":[{"role":"user","content":{"type":"text","text":"Greet"}}],"maxTokens":5}},` +
		`"name":{"method":"elicitation/create","params":{"mode":"form","message":"Name?","requestedSchema":{"type":"object"}}},` +
		`"roots":{"method":"roots/list"}}}`
	if len(h.calls) != 1 || h.calls[0] != (hostCall{importAskClient, want}) {
		t.Errorf("calls = %v,\nwant %s", h.calls, want)
	}
}

func TestAskRefusesBadRequests(t *testing.T) {
	ctx := &Context{Meta: Meta{}, host: &fakeHost{}}
	for name, reqs := range map[string]map[string]*InputRequest{
		"none":      {},
		"empty key": {"": {ListRoots: true}},
		"nothing":   {"a": {}},
		"two":       {"a": {ListRoots: true, Elicit: &ElicitParams{}}},
		"nil":       {"a": nil},
		"url no id": {"a": {ElicitURL: &ElicitURLParams{URL: "https://example.com"}}},
	} {
		if _, err := ctx.Ask(reqs); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if calls := ctx.host.(*fakeHost).calls; len(calls) != 0 {
		t.Errorf("the host was called: %v", calls)
	}
}

func TestAskFailure(t *testing.T) {
	h := &fakeHost{answers: map[string]string{importAskClient: `{"error":"client lacks sampling"}`}}
	ctx := &Context{Meta: Meta{}, host: h}
	_, err := ctx.Ask(map[string]*InputRequest{"a": {CreateMessage: &CreateMessageParams{MaxTokens: 1}}})
	var he *HostError
	if !errors.As(err, &he) || he.Import != importAskClient || he.Message != "client lacks sampling" {
		t.Errorf("err = %v", err)
	}
}

func TestClientCapabilities(t *testing.T) {
	tests := []struct {
		meta                     Meta
		declared, elicit, sample bool
	}{
		{Meta{}, false, false, false},
		{Meta{MetaClientCapabilities: map[string]any{}}, true, false, false},
		{Meta{MetaClientCapabilities: map[string]any{"sampling": map[string]any{}}}, true, false, true},
		{Meta{MetaClientCapabilities: map[string]any{"elicitation": map[string]any{}}}, true, true, false},
		{Meta{MetaClientCapabilities: map[string]any{"elicitation": map[string]any{"url": map[string]any{}}}}, true, false, false},
		{Meta{MetaClientCapabilities: map[string]any{"elicitation": map[string]any{"form": map[string]any{}, "url": map[string]any{}}}}, true, true, false},
		{Meta{MetaClientCapabilities: "nonsense"}, false, false, false},
	}
	for _, tt := range tests {
		caps, declared := (&Context{Meta: tt.meta}).ClientCapabilities()
		if declared != tt.declared || caps.CanElicit() != tt.elicit || (caps.Sampling != nil) != tt.sample {
			t.Errorf("%v: declared %v, elicit %v, sampling %v; want %v, %v, %v", tt.meta, declared, caps.CanElicit(), caps.Sampling != nil, tt.declared, tt.elicit, tt.sample)
		}
	}
}
