package pdk

// ResourceContents is the contents of a resource: [*TextResourceContents]
// or [*BlobResourceContents].
type ResourceContents interface {
	resourceContents()
}

// TextResourceContents is the contents of a text resource.
type TextResourceContents struct {
	URI      string `json:"uri"`
	MIMEType string `json:"mimeType,omitempty"`
	Text     string `json:"text"`
	Meta     Meta   `json:"_meta,omitempty"`
}

// BlobResourceContents is the contents of a binary resource. Blob holds
// the raw bytes; they are base64 encoded in JSON.
type BlobResourceContents struct {
	URI      string `json:"uri"`
	MIMEType string `json:"mimeType,omitempty"`
	Blob     []byte `json:"blob"`
	Meta     Meta   `json:"_meta,omitempty"`
}

func (*TextResourceContents) resourceContents() {}
func (*BlobResourceContents) resourceContents() {}
