package core

import (
	"fmt"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hangar-mcp/hangar/internal/server/wire"
)

// The protocol versions whose differences Hangar adapts to. A client speaks
// one of them (a session negotiates it at initialize), and Hangar sends it
// nothing that version does not define:
//
//   - 2024-11-05: no completions capability (completion/complete is
//     served, as that version defines the method without a capability), no
//     audio or resource_link content, no progress message, no elicitation.
//     A sampling request with audio fails (the plugin is told why).
//   - 2025-03-26: audio content, the completions capability and progress
//     messages; still no resource_link content and no elicitation.
//   - 2025-06-18: resource_link content and form elicitation, whose request
//     has no mode field.
//   - 2025-11-25: URL-mode elicitation, the mode field and
//     notifications/elicitation/complete.
//   - 2026-07-28: no sessions; requests carry their version and client
//     capabilities in _meta, and a server asks the client for input with
//     multi round-trip results. Its content is 2025-11-25's: the edge
//     that serves it (package stateless) adapts the rest.
//
// Content a version lacks is replaced, in tool results and prompt
// messages, by a text block describing it (a resource link becomes
// "Resource: URI", with its name, title and MIME type), so the model still
// learns of it; fields a version lacks in objects (a tool's title or output
// schema, a result's structuredContent) are left in, as every version's
// schema lets objects carry more properties than it names.
//
// The core adapts the content of the results it returns to Request.Version
// (Content) and the capabilities an edge announces (CapabilitiesFor); an
// edge adapts what it sends a client otherwise.
//
// Versions are compared through their order (package wire), never as
// strings.
const (
	Version20241105 = wire.Version20241105
	Version20250326 = wire.Version20250326
	Version20250618 = wire.Version20250618
	Version20251125 = wire.Version20251125
	Version20260728 = wire.Version20260728
)

// CapabilitiesFor returns caps without what version v does not define.
func CapabilitiesFor(v string, caps *mcp.ServerCapabilities) *mcp.ServerCapabilities {
	if wire.Before(v, Version20250326) && caps.Completions != nil {
		c := *caps
		c.Completions = nil
		return &c
	}
	return caps
}

// Content returns content with the blocks version v lacks replaced by text
// describing them ("" lacks nothing). It replaces them in a copy.
func Content(v string, content []mcp.Content) []mcp.Content {
	if !wire.Before(v, Version20250618) {
		return content
	}
	out, copied := content, false
	for i, c := range content {
		var text string
		switch c := c.(type) {
		case *mcp.ResourceLink:
			text = describeLink(c)
		case *mcp.AudioContent:
			if !wire.Before(v, Version20250326) {
				continue
			}
			text = fmt.Sprintf("[audio (%s, %d bytes) left out: protocol version %s has no audio content]", c.MIMEType, len(c.Data), v)
		default:
			continue
		}
		if !copied {
			out, copied = slices.Clone(content), true // replace in a copy
		}
		out[i] = &mcp.TextContent{Text: text}
	}
	return out
}

// describeLink is the text that stands for a resource link in protocol
// versions without resource_link content.
func describeLink(l *mcp.ResourceLink) string {
	var b strings.Builder
	b.WriteString("Resource: ")
	b.WriteString(l.URI)
	var about []string
	for _, s := range []string{l.Name, l.Title, l.MIMEType} {
		if s != "" {
			about = append(about, s)
		}
	}
	if len(about) > 0 {
		fmt.Fprintf(&b, " (%s)", strings.Join(about, ", "))
	}
	if l.Description != "" {
		b.WriteString(": ")
		b.WriteString(l.Description)
	}
	return b.String()
}
