//go:build wasip1

package main

import (
	"encoding/json"

	"github.com/hangar-mcp/hangar/pdk"
)

func addResources() {
	pdk.AddResource(&pdk.Resource{
		URI:         "test://static-text",
		Name:        "static-text",
		Description: "A static text resource",
		MIMEType:    "text/plain",
	}, staticText("This is the content of the static text resource."))
	pdk.AddResource(&pdk.Resource{
		URI:         "test://static-binary",
		Name:        "static-binary",
		Description: "A static binary resource (a 1x1 red PNG)",
		MIMEType:    "image/png",
	}, staticBinary)
	pdk.AddResource(&pdk.Resource{
		URI:         "test://watched-resource",
		Name:        "watched-resource",
		Description: "A resource clients can subscribe to",
		MIMEType:    "text/plain",
	}, staticText("Watched resource content"))
	pdk.AddResourceTemplate(&pdk.ResourceTemplate{
		URITemplate: "test://template/{id}/data",
		Name:        "template-data",
		Description: "Data for an id, from a resource template",
		MIMEType:    "application/json",
	}, templateData)
}

// staticText returns a handler serving a fixed text.
func staticText(text string) pdk.ResourceHandler {
	return func(_ *pdk.Context, req *pdk.ReadResourceRequest) (*pdk.ReadResourceResult, error) {
		return &pdk.ReadResourceResult{Contents: []pdk.ResourceContents{
			&pdk.TextResourceContents{URI: req.URI, MIMEType: "text/plain", Text: text},
		}}, nil
	}
}

func staticBinary(_ *pdk.Context, req *pdk.ReadResourceRequest) (*pdk.ReadResourceResult, error) {
	return &pdk.ReadResourceResult{Contents: []pdk.ResourceContents{
		&pdk.BlobResourceContents{URI: req.URI, MIMEType: "image/png", Blob: pngImage},
	}}, nil
}

func templateData(_ *pdk.Context, req *pdk.ReadResourceRequest) (*pdk.ReadResourceResult, error) {
	id := req.Vars["id"]
	data, err := json.Marshal(struct {
		ID           string `json:"id"`
		TemplateTest bool   `json:"templateTest"`
		Data         string `json:"data"`
	}{id, true, "Data for ID: " + id})
	if err != nil {
		return nil, err
	}
	return &pdk.ReadResourceResult{Contents: []pdk.ResourceContents{
		&pdk.TextResourceContents{URI: req.URI, MIMEType: "application/json", Text: string(data)},
	}}, nil
}
