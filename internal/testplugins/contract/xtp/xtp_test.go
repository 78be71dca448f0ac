package xtp

import (
	"reflect"
	"strings"
	"testing"
)

func load(t *testing.T) *Contract {
	t.Helper()
	c, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestFunctions pins the functions of the seed schema: 9 exports, 10
// imports.
func TestFunctions(t *testing.T) {
	c := load(t)
	wantExports := []string{"call_tool", "complete", "get_prompt", "list_prompts", "list_resource_templates",
		"list_resources", "list_tools", "on_roots_list_changed", "read_resource"}
	wantImports := []string{"create_elicitation", "create_message", "list_roots", "notify_logging_message",
		"notify_progress", "notify_prompt_list_changed", "notify_resource_list_changed", "notify_resource_updated",
		"notify_tool_list_changed", "notify_url_elicitation_completed"}
	if got := c.Exports(); !reflect.DeepEqual(got, wantExports) {
		t.Errorf("exports = %v", got)
	}
	if got := c.Imports(); !reflect.DeepEqual(got, wantImports) {
		t.Errorf("imports = %v", got)
	}
	for _, name := range wantExports {
		f := c.Export(name)
		if f.Input == nil {
			t.Errorf("export %s has no input", name)
		}
		if (f.Output == nil) != (name == "on_roots_list_changed") {
			t.Errorf("export %s: output %v", name, f.Output)
		}
	}
	for _, name := range wantImports {
		f := c.Import(name)
		hasInput := !strings.HasSuffix(name, "_list_changed") && name != "list_roots"
		hasOutput := strings.HasPrefix(name, "create_") || name == "list_roots"
		if (f.Input != nil) != hasInput || (f.Output != nil) != hasOutput {
			t.Errorf("import %s: input %v, output %v", name, f.Input != nil, f.Output != nil)
		}
	}
}

// TestUnions pins the members whose alternatives the schema names in prose.
func TestUnions(t *testing.T) {
	want := map[string][]string{
		"imports.create_elicitation.input":                          {"FormElicitRequestParamWithTimeout", "UrlElicitRequestParamWithTimeout"},
		"components.schemas.CompleteRequestParam.properties.ref":    {"PromptReference", "ResourceTemplateReference"},
		"components.schemas.CreateMessageResult.properties.content": {"AudioContent", "ImageContent", "TextContent"},
		"components.schemas.EmbeddedResource.properties.resource":   {"BlobResourceContents", "TextResourceContents"},
		"components.schemas.PromptMessage.properties.content": {"AudioContent", "EmbeddedResource", "ImageContent",
			"ResourceLink", "TextContent"},
		"components.schemas.Schema.properties.properties": {"BooleanSchema", "EnumSchema", "NumberSchema", "StringSchema"},
	}
	if got := load(t).Unions(); !reflect.DeepEqual(got, want) {
		t.Errorf("unions = %v\nwant %v", got, want)
	}
}

func TestValidate(t *testing.T) {
	c := load(t)
	complete := c.Export("complete").Input
	for _, tc := range []struct {
		doc           string
		strict, loose bool
	}{
		{`{"request":{"ref":{"type":"prompt","name":"p"},"argument":{"name":"a","value":""}},"context":{"id":"1","_meta":{}}}`, true, true},
		{`{"request":{"ref":{"type":"resource","uri":"x://{y}"},"argument":{"name":"y","value":"1"},"context":{"arguments":{"a":"b"}}},"context":{"id":"","_meta":{"progressToken":1}}}`, true, true},
		// MCP's names for the reference types are not the schema's.
		{`{"request":{"ref":{"type":"ref/prompt","name":"p"},"argument":{"name":"a","value":""}},"context":{"id":"1","_meta":{}}}`, false, false},
		{`{"request":{"ref":{"type":"ref/resource","uri":"x://{y}"},"argument":{"name":"a","value":""}},"context":{"id":"1","_meta":{}}}`, false, false},
		// A member the schema does not name: only loose validation allows it.
		{`{"request":{"ref":{"type":"prompt","name":"p"},"argument":{"name":"a","value":""},"_meta":{}},"context":{"id":"1","_meta":{}}}`, false, true},
		// The id is a string.
		{`{"request":{"ref":{"type":"prompt","name":"p"},"argument":{"name":"a","value":""}},"context":{"id":1,"_meta":{}}}`, false, false},
		// context is required.
		{`{"request":{"ref":{"type":"prompt","name":"p"},"argument":{"name":"a","value":""}}}`, false, false},
	} {
		if err := complete.Validate([]byte(tc.doc)); (err == nil) != tc.strict {
			t.Errorf("Validate(%s) = %v, want valid %v", tc.doc, err, tc.strict)
		}
		if err := complete.ValidateLoose([]byte(tc.doc)); (err == nil) != tc.loose {
			t.Errorf("ValidateLoose(%s) = %v, want valid %v", tc.doc, err, tc.loose)
		}
	}

	// A bare string enum ("enum": "form") is a one-value enum.
	elicit := c.Import("create_elicitation").Input
	if err := elicit.Validate([]byte(`{"mode":"form","message":"m","requestedSchema":{"type":"object","properties":{"a":{"type":"string"}}}}`)); err != nil {
		t.Errorf("form elicitation: %v", err)
	}
	if err := elicit.Validate([]byte(`{"mode":"forms","message":"m","requestedSchema":{"type":"object","properties":{}}}`)); err == nil {
		t.Errorf("mode forms is valid")
	}
	// The map of primitive schemas is checked too.
	if err := elicit.Validate([]byte(`{"mode":"form","message":"m","requestedSchema":{"type":"object","properties":{"a":{"type":"object"}}}}`)); err == nil {
		t.Errorf("a nested object schema is valid")
	}
}

func TestUncovered(t *testing.T) {
	c := load(t)
	got, err := c.Export("complete").Output.Uncovered([]byte(`{"completion":{"values":["a"]}}`))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"completion.hasMore", "completion.total"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Uncovered = %v, want %v", got, want)
	}
	got, err = c.Export("get_prompt").Output.Uncovered([]byte(`{"messages":[{"role":"user","content":{"type":"text","text":"x"}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"description", "messages[0].content._meta", "messages[0].content.annotations"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Uncovered = %v, want %v", got, want)
	}
}

// TestParseRefusesWhatItDoesNotKnow: an unknown keyword or a dangling $ref
// is an error, not silently ignored.
func TestParseRefusesWhatItDoesNotKnow(t *testing.T) {
	for _, doc := range []string{
		`{"exports":{},"imports":{},"components":{"schemas":{"A":{"type":"object","patternProperties":{}}}}}`,
		`{"exports":{},"imports":{},"components":{"schemas":{"A":{"$ref":"#/components/schemas/B"}}}}`,
		`{"exports":{"f":{"input":{"$ref":"#/components/schemas/B"}}},"imports":{},"components":{"schemas":{}}}`,
		`{"exports":{},"imports":{},"components":{"schemas":{"A":{"type":"object","required":["x"]}}}}`,
		`{"exports":{},"imports":{},"components":{"schemas":{"A":{"type":"number","format":"decimal"}}}}`,
	} {
		if _, err := Parse([]byte(doc)); err == nil {
			t.Errorf("Parse(%s) succeeded", doc)
		}
	}
	// nullable widens the type.
	c, err := Parse([]byte(`{"exports":{"f":{"input":{"$ref":"#/components/schemas/A"}}},"imports":{},"components":{"schemas":{"A":{"type":"object","properties":{"x":{"type":"string","nullable":true}}}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Export("f").Input.Validate([]byte(`{"x":null}`)); err != nil {
		t.Errorf("nullable: %v", err)
	}
	if err := c.Export("f").Input.Validate([]byte(`{"x":1}`)); err == nil {
		t.Errorf("nullable string accepts a number")
	}
}
