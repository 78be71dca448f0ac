package wire

import (
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// WithoutCacheHints returns res without its cache hints (ttlMs and
// cacheScope), for a client of a version before 2026-07-28: the result of
// a list or a read, as it marshals for such a client. Other results are
// returned as they are.
func WithoutCacheHints(res mcp.Result) mcp.Result {
	switch r := res.(type) {
	case *mcp.ListToolsResult:
		return legacyTools{r}
	case *mcp.ListPromptsResult:
		return legacyPrompts{r}
	case *mcp.ListResourcesResult:
		return legacyResources{r}
	case *mcp.ListResourceTemplatesResult:
		return legacyTemplates{r}
	case *mcp.ReadResourceResult:
		return legacyRead{r}
	}
	return res
}

// The results of lists and reads as versions before 2026-07-28 define
// them: their members in the go-sdk's order, without ttlMs and
// cacheScope. The go-sdk marshals list results without HTML escaping, a
// read's with (its MarshalJSON uses json.Marshal); so do these.

type legacyTools struct{ *mcp.ListToolsResult }

func (r legacyTools) MarshalJSON() ([]byte, error) {
	return MarshalPlain(struct {
		Meta       mcp.Meta    `json:"_meta,omitempty"`
		NextCursor string      `json:"nextCursor,omitempty"`
		Tools      []*mcp.Tool `json:"tools"`
	}{r.Meta, r.NextCursor, r.Tools})
}

type legacyPrompts struct{ *mcp.ListPromptsResult }

func (r legacyPrompts) MarshalJSON() ([]byte, error) {
	return MarshalPlain(struct {
		Meta       mcp.Meta      `json:"_meta,omitempty"`
		NextCursor string        `json:"nextCursor,omitempty"`
		Prompts    []*mcp.Prompt `json:"prompts"`
	}{r.Meta, r.NextCursor, r.Prompts})
}

type legacyResources struct{ *mcp.ListResourcesResult }

func (r legacyResources) MarshalJSON() ([]byte, error) {
	return MarshalPlain(struct {
		Meta       mcp.Meta        `json:"_meta,omitempty"`
		NextCursor string          `json:"nextCursor,omitempty"`
		Resources  []*mcp.Resource `json:"resources"`
	}{r.Meta, r.NextCursor, r.Resources})
}

type legacyTemplates struct {
	*mcp.ListResourceTemplatesResult
}

func (r legacyTemplates) MarshalJSON() ([]byte, error) {
	return MarshalPlain(struct {
		Meta              mcp.Meta                `json:"_meta,omitempty"`
		NextCursor        string                  `json:"nextCursor,omitempty"`
		ResourceTemplates []*mcp.ResourceTemplate `json:"resourceTemplates"`
	}{r.Meta, r.NextCursor, r.ResourceTemplates})
}

type legacyRead struct{ *mcp.ReadResourceResult }

func (r legacyRead) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Meta     mcp.Meta                `json:"_meta,omitempty"`
		Contents []*mcp.ResourceContents `json:"contents"`
	}{r.Meta, r.Contents})
}
