package pdk

import (
	"encoding/json"
	"errors"
	"strconv"
)

// Meta is the free-form _meta object that MCP attaches to requests,
// results and many other values.
type Meta map[string]any

// Role is the sender or intended recipient of a message or content block.
type Role string

// The roles defined by MCP.
const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
)

// Annotations tell the client how to use or display a content block or
// resource.
type Annotations struct {
	// Audience lists who the content is meant for.
	Audience []Role `json:"audience,omitempty"`
	// LastModified is an ISO 8601 timestamp, such as "2025-01-12T15:00:58Z".
	LastModified string `json:"lastModified,omitempty"`
	// Priority ranges from 0 (least important) to 1 (most important).
	// The zero value is omitted, which leaves the priority unspecified.
	Priority float64 `json:"priority,omitempty"`
}

// Icon is an icon a client may display for a tool, resource or prompt.
type Icon struct {
	// Src is an http(s) or data: URI of the image.
	Src      string `json:"src"`
	MIMEType string `json:"mimeType,omitempty"`
	// Sizes are sizes in WxH form, such as "48x48", or "any".
	Sizes []string `json:"sizes,omitempty"`
	// Theme is "light" or "dark" when the icon suits only one theme.
	Theme string `json:"theme,omitempty"`
}

// Content is a content block of a tool result, prompt message or sampling
// message: one of [*TextContent], [*ImageContent], [*AudioContent],
// [*ResourceLink] or [*EmbeddedResource]. Each marshals with its MCP "type"
// discriminator.
type Content interface {
	content()
}

// TextContent is a block of text.
type TextContent struct {
	Text        string       `json:"text"`
	Annotations *Annotations `json:"annotations,omitempty"`
	Meta        Meta         `json:"_meta,omitempty"`
}

// ImageContent is an image. Data holds the raw bytes; they are base64
// encoded in JSON.
type ImageContent struct {
	Data        []byte       `json:"data"`
	MIMEType    string       `json:"mimeType"`
	Annotations *Annotations `json:"annotations,omitempty"`
	Meta        Meta         `json:"_meta,omitempty"`
}

// AudioContent is an audio clip. Data holds the raw bytes; they are base64
// encoded in JSON.
type AudioContent struct {
	Data        []byte       `json:"data"`
	MIMEType    string       `json:"mimeType"`
	Annotations *Annotations `json:"annotations,omitempty"`
	Meta        Meta         `json:"_meta,omitempty"`
}

// ResourceLink points to a resource the client can read or subscribe to.
type ResourceLink struct {
	URI         string       `json:"uri"`
	Name        string       `json:"name"`
	Title       string       `json:"title,omitempty"`
	Description string       `json:"description,omitempty"`
	MIMEType    string       `json:"mimeType,omitempty"`
	Size        int64        `json:"size,omitempty"`
	Icons       []Icon       `json:"icons,omitempty"`
	Annotations *Annotations `json:"annotations,omitempty"`
	Meta        Meta         `json:"_meta,omitempty"`
}

// EmbeddedResource carries the contents of a resource inline.
type EmbeddedResource struct {
	Resource    ResourceContents `json:"resource"`
	Annotations *Annotations     `json:"annotations,omitempty"`
	Meta        Meta             `json:"_meta,omitempty"`
}

func (*TextContent) content()      {}
func (*ImageContent) content()     {}
func (*AudioContent) content()     {}
func (*ResourceLink) content()     {}
func (*EmbeddedResource) content() {}

// MarshalJSON encodes c with "type": "text".
func (c TextContent) MarshalJSON() ([]byte, error) {
	type fields TextContent
	return json.Marshal(struct {
		Type string `json:"type"`
		fields
	}{"text", fields(c)})
}

// MarshalJSON encodes c with "type": "image".
func (c ImageContent) MarshalJSON() ([]byte, error) {
	type fields ImageContent
	return json.Marshal(struct {
		Type string `json:"type"`
		fields
	}{"image", fields(c)})
}

// MarshalJSON encodes c with "type": "audio".
func (c AudioContent) MarshalJSON() ([]byte, error) {
	type fields AudioContent
	return json.Marshal(struct {
		Type string `json:"type"`
		fields
	}{"audio", fields(c)})
}

// MarshalJSON encodes l with "type": "resource_link".
func (l ResourceLink) MarshalJSON() ([]byte, error) {
	type fields ResourceLink
	return json.Marshal(struct {
		Type string `json:"type"`
		fields
	}{"resource_link", fields(l)})
}

// MarshalJSON encodes r with "type": "resource".
func (r EmbeddedResource) MarshalJSON() ([]byte, error) {
	type fields EmbeddedResource
	return json.Marshal(struct {
		Type string `json:"type"`
		fields
	}{"resource", fields(r)})
}

// unmarshalSamplingContent decodes the content of a sampling message:
// text, image or audio, according to its "type".
func unmarshalSamplingContent(data []byte) (Content, error) {
	var head struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return nil, err
	}
	var c Content
	switch head.Type {
	case "text":
		c = new(TextContent)
	case "image":
		c = new(ImageContent)
	case "audio":
		c = new(AudioContent)
	default:
		return nil, errors.New("unsupported sampling content type " + strconv.Quote(head.Type))
	}
	if err := json.Unmarshal(data, c); err != nil {
		return nil, wrapError(err, "decoding "+head.Type+" content")
	}
	return c, nil
}
