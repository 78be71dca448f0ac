package plugin

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Content blocks as other toolchains write them.
//
// The schema's content types (TextContent, ImageContent, ...) require their
// "type" member, but bindings generated from it leave it to the plugin's
// author: a Go struct whose Type field was not set sends "type": "", and
// other writers leave it out. Where such a block can only be one type (a
// "text" member is text; "data" with an image/ or audio/ "mimeType" is an
// image or audio clip; "resource" is an embedded resource; "uri" and
// "name" are a resource link), Hangar reads it as that type; otherwise it
// answers an error that names the member and what was expected, instead of
// the go-sdk's "unrecognized content type \"\"".

// Where content blocks appear, and the types allowed there.
var (
	samplingTypes = []string{"text", "image", "audio"}
	resultTypes   = []string{"text", "image", "audio", "resource_link", "resource"}
)

// jsonKind names the kind of a JSON value, for error messages: "a string",
// "a number", "an object", ...
func jsonKind(v json.RawMessage) string {
	v = bytes.TrimSpace(v)
	if len(v) == 0 {
		return "nothing"
	}
	switch v[0] {
	case '"':
		return "a string"
	case '{':
		return "an object"
	case '[':
		return "an array"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

// quoteList renders names as `"a", "b" or "c"`.
func quoteList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	if len(q) == 1 {
		return q[0]
	}
	return strings.Join(q[:len(q)-1], ", ") + " or " + q[len(q)-1]
}

// member joins a path and a member name: "messages[0]" and "text" make
// "messages[0].text".
func member(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// blockMembers are the members of content blocks whose JSON kind Hangar
// checks, so that a wrong one is named: the go-sdk's decoder would say
// "cannot unmarshal number into Go struct field wireContent.text".
var blockMembers = map[string]byte{
	"type": '"', "text": '"', "data": '"', "mimeType": '"', "uri": '"', "name": '"',
	"title": '"', "description": '"', "resource": '{', "annotations": '{', "_meta": '{',
}

// contentBlock checks the content block raw, found at path, whose type must
// be one of allowed. It returns the block with its "type" member set (raw
// itself when it was), or an error naming the member at fault.
func contentBlock(raw json.RawMessage, path string, allowed []string) (json.RawMessage, error) {
	var m map[string]json.RawMessage
	if t := bytes.TrimSpace(raw); len(t) == 0 || t[0] != '{' || json.Unmarshal(t, &m) != nil {
		return nil, fmt.Errorf("%s: expected a content block (an object with a \"type\": %s), got %s", orWhole(path), quoteList(allowed), jsonKind(raw))
	}
	for name, kind := range blockMembers {
		v, ok := m[name]
		if !ok || string(bytes.TrimSpace(v)) == "null" {
			continue
		}
		if t := bytes.TrimSpace(v); len(t) == 0 || t[0] != kind {
			want := "a string"
			if kind == '{' {
				want = "an object"
			}
			return nil, fmt.Errorf("%s: expected %s, got %s", member(path, name), want, jsonKind(v))
		}
	}
	var typ string
	if v, ok := m["type"]; ok {
		json.Unmarshal(v, &typ)
	}
	if typ != "" {
		for _, a := range allowed {
			if typ == a {
				return raw, nil
			}
		}
		return nil, fmt.Errorf("%s: %q is not allowed here; expected %s", member(path, "type"), typ, quoteList(allowed))
	}
	typ, err := inferType(m)
	if err == nil && !contains(allowed, typ) {
		err = fmt.Errorf("the members are those of %q, which is not allowed here", typ)
	}
	if err != nil {
		what := "missing"
		if _, ok := m["type"]; ok {
			what = "empty"
		}
		return nil, fmt.Errorf("%s: %s, and %v; expected %s", member(path, "type"), what, err, quoteList(allowed))
	}
	m["type"], _ = json.Marshal(typ)
	return json.Marshal(m)
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func orWhole(path string) string {
	if path == "" {
		return "content block"
	}
	return path
}

// inferType returns the only content type a block without one can be.
func inferType(m map[string]json.RawMessage) (string, error) {
	has := func(name string) bool { v, ok := m[name]; return ok && string(v) != "null" }
	switch {
	case has("text") && !has("uri") && !has("data") && !has("resource"):
		return "text", nil
	case has("resource") && !has("text") && !has("data"):
		return "resource", nil
	case has("data") && has("mimeType") && !has("text"):
		var mime string
		json.Unmarshal(m["mimeType"], &mime)
		switch {
		case strings.HasPrefix(mime, "image/"):
			return "image", nil
		case strings.HasPrefix(mime, "audio/"):
			return "audio", nil
		}
		return "", fmt.Errorf("the mimeType %q is neither image/ nor audio/", mime)
	case has("uri") && has("name") && !has("text") && !has("data"):
		return "resource_link", nil
	}
	return "", errors.New("its members do not tell which type it is")
}

// contentList checks the array of content blocks raw, found at path. It
// returns the array with every block's type set, or nil when every block
// had its type already.
func contentList(raw json.RawMessage, path string, allowed []string) (json.RawMessage, error) {
	var blocks []json.RawMessage
	if t := bytes.TrimSpace(raw); len(t) == 0 || t[0] != '[' || json.Unmarshal(t, &blocks) != nil {
		return nil, fmt.Errorf("%s: expected an array of content blocks, got %s", path, jsonKind(raw))
	}
	changed := false
	for i, b := range blocks {
		fixed, err := contentBlock(b, fmt.Sprintf("%s[%d]", path, i), allowed)
		if err != nil {
			return nil, err
		}
		if !bytes.Equal(fixed, b) {
			blocks[i], changed = fixed, true
		}
	}
	if !changed {
		return nil, nil
	}
	return json.Marshal(blocks)
}

// withContentTypes returns the output b of call_tool or get_prompt with the
// type of each content block set, or an error naming the member at fault;
// nil when there is nothing to set. The blocks are in b's "content" array
// (call_tool) or in each message's "content" (get_prompt).
func withContentTypes(b []byte, export string) ([]byte, error) {
	var top map[string]json.RawMessage
	if json.Unmarshal(b, &top) != nil {
		return nil, nil // not an object: the decoder says so
	}
	changed := false
	switch export {
	case "call_tool":
		raw, ok := top["content"]
		if !ok || string(raw) == "null" {
			return nil, nil
		}
		fixed, err := contentList(raw, "content", resultTypes)
		if err != nil || fixed == nil {
			return nil, err
		}
		top["content"], changed = fixed, true
	case "get_prompt":
		var msgs []map[string]json.RawMessage
		if json.Unmarshal(top["messages"], &msgs) != nil {
			return nil, nil
		}
		for i, msg := range msgs {
			raw, ok := msg["content"]
			if !ok || string(raw) == "null" {
				return nil, fmt.Errorf("messages[%d].content: missing; expected a content block", i)
			}
			fixed, err := contentBlock(raw, fmt.Sprintf("messages[%d].content", i), resultTypes)
			if err != nil {
				return nil, err
			}
			if !bytes.Equal(fixed, raw) {
				msg["content"], changed = fixed, true
			}
		}
		if changed {
			top["messages"], _ = json.Marshal(msgs)
		}
	}
	if !changed {
		return nil, nil
	}
	return json.Marshal(top)
}

// samplingMessages reads create_message's messages: MCP's sampling
// messages, {"role", "content"}, whose content is a block or an array of
// blocks (one message each, in that role), and bare content blocks, which
// XTP's generated bindings send for the schema's untyped items: each is a
// message of the user. Blocks are text, image or audio.
func samplingMessages(raw json.RawMessage) ([]*mcp.SamplingMessage, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, errors.New("messages: missing; expected an array of messages ({\"role\", \"content\"}) or content blocks")
	}
	var items []json.RawMessage
	if t := bytes.TrimSpace(raw); t[0] != '[' || json.Unmarshal(t, &items) != nil {
		return nil, fmt.Errorf("messages: expected an array of messages ({\"role\", \"content\"}) or content blocks, got %s", jsonKind(raw))
	}
	out := make([]*mcp.SamplingMessage, 0, len(items))
	for i, item := range items {
		path := fmt.Sprintf("messages[%d]", i)
		var m map[string]json.RawMessage
		if t := bytes.TrimSpace(item); len(t) == 0 || t[0] != '{' || json.Unmarshal(t, &m) != nil {
			return nil, fmt.Errorf("%s: expected a message ({\"role\", \"content\"}) or a content block, got %s", path, jsonKind(item))
		}
		_, hasRole := m["role"]
		_, hasContent := m["content"]
		if !hasRole && !hasContent {
			msg, err := samplingMessage(mcp.Role("user"), item, path)
			if err != nil {
				return nil, err
			}
			out = append(out, msg)
			continue
		}
		var role string
		if err := json.Unmarshal(m["role"], &role); err != nil || role != "user" && role != "assistant" {
			got := "missing"
			if hasRole {
				got = "got " + string(bytes.TrimSpace(m["role"]))
			}
			return nil, fmt.Errorf("%s: %s; expected \"user\" or \"assistant\"", member(path, "role"), got)
		}
		content := bytes.TrimSpace(m["content"])
		switch {
		case !hasContent || string(content) == "null":
			return nil, fmt.Errorf("%s: missing; expected a content block (%s)", member(path, "content"), quoteList(samplingTypes))
		case content[0] == '[':
			var blocks []json.RawMessage
			if err := json.Unmarshal(content, &blocks); err != nil || len(blocks) == 0 {
				return nil, fmt.Errorf("%s: expected a content block or a non-empty array of them", member(path, "content"))
			}
			for j, b := range blocks {
				msg, err := samplingMessage(mcp.Role(role), b, fmt.Sprintf("%s.content[%d]", path, j))
				if err != nil {
					return nil, err
				}
				out = append(out, msg)
			}
		default:
			msg, err := samplingMessage(mcp.Role(role), content, member(path, "content"))
			if err != nil {
				return nil, err
			}
			out = append(out, msg)
		}
	}
	return out, nil
}

// samplingMessage makes the message of role whose content is the block raw,
// found at path.
func samplingMessage(role mcp.Role, raw json.RawMessage, path string) (*mcp.SamplingMessage, error) {
	block, err := contentBlock(raw, path, samplingTypes)
	if err != nil {
		return nil, err
	}
	wire, err := json.Marshal(struct {
		Role    mcp.Role        `json:"role"`
		Content json.RawMessage `json:"content"`
	}{role, block})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	msg := new(mcp.SamplingMessage)
	if err := json.Unmarshal(wire, msg); err != nil {
		if strings.Contains(err.Error(), "base64") {
			return nil, fmt.Errorf("%s: expected base64 data: %w", member(path, "data"), err)
		}
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return msg, nil
}
