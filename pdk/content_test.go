package pdk

import (
	"encoding/json"
	"testing"
)

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("marshal %T: %v", v, err)
	}
	return string(b)
}

func TestContentMarshalsWithType(t *testing.T) {
	tests := []struct {
		name    string
		content Content
		want    string
	}{
		{"text", &TextContent{Text: "hi"}, `{"type":"text","text":"hi"}`},
		{"text annotated",
			&TextContent{Text: "", Annotations: &Annotations{Audience: []Role{RoleUser}, Priority: 0.5}, Meta: Meta{"k": 1}},
			`{"type":"text","text":"","annotations":{"audience":["user"],"priority":0.5},"_meta":{"k":1}}`},
		{"image", &ImageContent{Data: []byte{1, 2, 3}, MIMEType: "image/png"}, `{"type":"image","data":"AQID","mimeType":"image/png"}`},
		{"audio", &AudioContent{Data: []byte("RIFF"), MIMEType: "audio/wav"}, `{"type":"audio","data":"UklGRg==","mimeType":"audio/wav"}`},
		{"resource link", &ResourceLink{URI: "test://a", Name: "a", Size: 3}, `{"type":"resource_link","uri":"test://a","name":"a","size":3}`},
		{"embedded text",
			&EmbeddedResource{Resource: &TextResourceContents{URI: "test://t", MIMEType: "text/plain", Text: "x"}},
			`{"type":"resource","resource":{"uri":"test://t","mimeType":"text/plain","text":"x"}}`},
		{"embedded blob",
			&EmbeddedResource{Resource: &BlobResourceContents{URI: "test://b", Blob: []byte{0xff}}},
			`{"type":"resource","resource":{"uri":"test://b","blob":"/w=="}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := mustJSON(t, tt.content); got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestCallToolResultJSON(t *testing.T) {
	res := &CallToolResult{
		Content:           []Content{&TextContent{Text: "42"}},
		StructuredContent: map[string]any{"answer": 42},
		IsError:           true,
	}
	want := `{"content":[{"type":"text","text":"42"}],"structuredContent":{"answer":42},"isError":true}`
	if got := mustJSON(t, res); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

func TestSchemasPassThrough(t *testing.T) {
	schema := `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","$defs":{"a":{"type":"string"}},` +
		`"properties":{"e":{"type":"string","enum":["x","y"],"default":"x"},"o":{"oneOf":[{"const":"a","title":"A"}]},` +
		`"arr":{"type":"array","items":{"anyOf":[{"const":"v","title":"V"}]}},"r":{"$ref":"#/$defs/a"}},"additionalProperties":false}`
	tool := Tool{Name: "t", InputSchema: json.RawMessage(schema), OutputSchema: json.RawMessage(schema)}
	want := `{"name":"t","inputSchema":` + schema + `,"outputSchema":` + schema + `}`
	if got := mustJSON(t, tool); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

func TestToolAnnotationsJSON(t *testing.T) {
	no := false
	tool := Tool{
		Name:        "t",
		InputSchema: map[string]any{"type": "object"},
		Annotations: &ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: &no},
		Icons:       []Icon{{Src: "data:image/png;base64,AA==", Sizes: []string{"16x16"}}},
		Meta:        Meta{"m": true},
	}
	want := `{"name":"t","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":true,"openWorldHint":false},` +
		`"icons":[{"src":"data:image/png;base64,AA==","sizes":["16x16"]}],"_meta":{"m":true}}`
	if got := mustJSON(t, tool); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

func TestPromptJSON(t *testing.T) {
	res := &GetPromptResult{
		Description: "d",
		Messages: []*PromptMessage{
			{Role: RoleUser, Content: &ImageContent{Data: []byte{0}, MIMEType: "image/png"}},
			{Role: RoleAssistant, Content: &TextContent{Text: "ok"}},
		},
	}
	want := `{"description":"d","messages":[{"role":"user","content":{"type":"image","data":"AA==","mimeType":"image/png"}},` +
		`{"role":"assistant","content":{"type":"text","text":"ok"}}]}`
	if got := mustJSON(t, res); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	p := Prompt{Name: "p", Arguments: []*PromptArgument{{Name: "a", Required: true}, {Name: "b"}}}
	want = `{"name":"p","arguments":[{"name":"a","required":true},{"name":"b"}]}`
	if got := mustJSON(t, p); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

func TestCreateMessageResultUnmarshal(t *testing.T) {
	var res CreateMessageResult
	data := `{"role":"assistant","content":{"type":"image","data":"AQI=","mimeType":"image/png"},"model":"m","stopReason":"endTurn","_meta":{"x":1}}`
	if err := json.Unmarshal([]byte(data), &res); err != nil {
		t.Fatal(err)
	}
	img, ok := res.Content.(*ImageContent)
	if !ok {
		t.Fatalf("content is %T, want *ImageContent", res.Content)
	}
	if string(img.Data) != "\x01\x02" || img.MIMEType != "image/png" || res.Model != "m" ||
		res.Role != RoleAssistant || res.StopReason != "endTurn" || res.Meta["x"] != 1.0 {
		t.Errorf("decoded %+v with content %+v", res, img)
	}
	if err := json.Unmarshal([]byte(`{"role":"assistant","content":{"type":"tool_use"},"model":"m"}`), &res); err == nil {
		t.Error("unsupported content type accepted")
	}
}

func TestCreateMessageParamsJSON(t *testing.T) {
	p := &CreateMessageParams{
		Messages:         []*SamplingMessage{{Role: RoleUser, Content: &TextContent{Text: "hi"}}},
		MaxTokens:        100,
		ModelPreferences: &ModelPreferences{Hints: []*ModelHint{{Name: "sonnet"}}, SpeedPriority: 1},
		IncludeContext:   IncludeThisServer,
	}
	want := `{"messages":[{"role":"user","content":{"type":"text","text":"hi"}}],"maxTokens":100,` +
		`"modelPreferences":{"hints":[{"name":"sonnet"}],"speedPriority":1},"includeContext":"thisServer"}`
	if got := mustJSON(t, p); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

func TestResourceJSON(t *testing.T) {
	r := Resource{URI: "test://r", Name: "r", MIMEType: "text/plain"}
	want := `{"uri":"test://r","name":"r","mimeType":"text/plain"}`
	if got := mustJSON(t, r); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	tmpl := ResourceTemplate{URITemplate: "test://t/{id}", Name: "t"}
	want = `{"uriTemplate":"test://t/{id}","name":"t"}`
	if got := mustJSON(t, tmpl); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	res := ReadResourceResult{Contents: []ResourceContents{
		&TextResourceContents{URI: "test://r", Text: ""},
		&BlobResourceContents{URI: "test://b", MIMEType: "image/png", Blob: []byte{}},
	}}
	want = `{"contents":[{"uri":"test://r","text":""},{"uri":"test://b","mimeType":"image/png","blob":""}]}`
	if got := mustJSON(t, res); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}
