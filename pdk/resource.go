package pdk

// Resource describes a resource with a fixed URI.
type Resource struct {
	URI         string `json:"uri"`
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	MIMEType    string `json:"mimeType,omitempty"`
	// Size is the size of the contents in bytes, if known.
	Size        int64        `json:"size,omitempty"`
	Icons       []Icon       `json:"icons,omitempty"`
	Annotations *Annotations `json:"annotations,omitempty"`
	Meta        Meta         `json:"_meta,omitempty"`
}

// ResourceTemplate describes a family of resources whose URIs match an
// RFC 6570 URI template.
type ResourceTemplate struct {
	// URITemplate is the template, such as "notes://note/{id}". Templates
	// registered with [AddResourceTemplate] may use only level-1
	// expressions ({name}).
	URITemplate string       `json:"uriTemplate"`
	Name        string       `json:"name"`
	Title       string       `json:"title,omitempty"`
	Description string       `json:"description,omitempty"`
	MIMEType    string       `json:"mimeType,omitempty"`
	Icons       []Icon       `json:"icons,omitempty"`
	Annotations *Annotations `json:"annotations,omitempty"`
	Meta        Meta         `json:"_meta,omitempty"`
}

// ReadResourceRequest is a request to read a resource.
type ReadResourceRequest struct {
	URI string `json:"uri"`
	// Vars holds the values of the template variables, decoded, when the
	// URI matched a resource template. It is nil for fixed resources.
	Vars map[string]string `json:"-"`
}

// ReadResourceResult is the contents of a resource.
type ReadResourceResult struct {
	Contents []ResourceContents `json:"contents"`
	Meta     Meta               `json:"_meta,omitempty"`
}

// ResourceHandler reads a resource. A returned error becomes an MCP error.
type ResourceHandler func(ctx *Context, req *ReadResourceRequest) (*ReadResourceResult, error)
