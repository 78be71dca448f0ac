package server

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The protocol versions whose differences Hangar adapts to. A session
// negotiates one of them at initialize, and Hangar sends it nothing that
// version does not define:
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
//
// Content a version lacks is replaced, in tool results and prompt
// messages, by a text block describing it (a resource link becomes
// "Resource: URI", with its name, title and MIME type), so the model still
// learns of it; fields a version lacks in objects (a tool's title or output
// schema, a result's structuredContent) are left in, as every version's
// schema lets objects carry more properties than it names.
const (
	version20241105 = "2024-11-05"
	version20250326 = "2025-03-26"
	version20250618 = "2025-06-18"
	version20251125 = "2025-11-25"
)

// sessionVersion is the protocol version ss negotiated, or "" before
// initialize. The SDK answers initialize with the version the client asked
// for if the server speaks it, and with the latest it speaks otherwise;
// the server speaks sessionProtocolVersions.
func sessionVersion(ss *mcp.ServerSession) string {
	if ss == nil {
		return ""
	}
	p := ss.InitializeParams()
	if p == nil {
		return ""
	}
	if slices.Contains(protocolVersions, p.ProtocolVersion) {
		return p.ProtocolVersion
	}
	return lastSessionProtocol
}

// protocolVersions is sessionProtocolVersions, once.
var protocolVersions = sessionProtocolVersions()

// serverSession is the server session a request belongs to, or nil.
func serverSession(req mcp.Request) *mcp.ServerSession {
	ss, _ := req.GetSession().(*mcp.ServerSession)
	return ss
}

// adaptResults is receiving middleware: it removes from the results of a
// session's requests what the session's protocol version lacks.
func adaptResults(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if err != nil || res == nil {
			return res, err
		}
		switch res := res.(type) {
		case *mcp.InitializeResult:
			if res.Capabilities != nil {
				res.Capabilities = capabilitiesFor(res.ProtocolVersion, res.Capabilities)
			}
		case *mcp.CallToolResult:
			adaptToolResult(serverSession(req), res)
		case *mcp.GetPromptResult:
			v := sessionVersion(serverSession(req))
			for _, m := range res.Messages {
				if m != nil && m.Content != nil {
					m.Content = contentFor(v, []mcp.Content{m.Content})[0]
				}
			}
		}
		return res, nil
	}
}

// adaptToolResult removes from a tool result what the protocol version of
// ss lacks, and returns it.
func adaptToolResult(ss *mcp.ServerSession, res *mcp.CallToolResult) *mcp.CallToolResult {
	res.Content = contentFor(sessionVersion(ss), res.Content)
	return res
}

// capabilitiesFor returns caps without what version v does not define.
func capabilitiesFor(v string, caps *mcp.ServerCapabilities) *mcp.ServerCapabilities {
	if v != "" && v < version20250326 && caps.Completions != nil {
		c := *caps
		c.Completions = nil
		return &c
	}
	return caps
}

// contentFor returns content with the blocks version v lacks replaced by
// text describing them.
func contentFor(v string, content []mcp.Content) []mcp.Content {
	if v == "" || v >= version20250618 {
		return content
	}
	out, copied := content, false
	for i, c := range content {
		var text string
		switch c := c.(type) {
		case *mcp.ResourceLink:
			text = describeLink(c)
		case *mcp.AudioContent:
			if v >= version20250326 {
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

// adaptRequests is sending middleware: it removes from the requests and
// notifications sent to a session what the session's protocol version
// lacks.
func adaptRequests(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		ss := serverSession(req)
		v := sessionVersion(ss)
		if v == "" || v >= version20251125 {
			return next(ctx, method, req)
		}
		switch p := req.GetParams().(type) {
		case *mcp.ElicitParams:
			// The SDK always sends a mode; before 2025-11-25 there was none,
			// and only form elicitation (sessionHost refuses URL mode).
			if p != nil {
				req = &mcp.ServerRequest[*modelessElicitParams]{Session: ss, Params: &modelessElicitParams{p}, Extra: req.GetExtra()}
			}
		case *mcp.CreateMessageParams:
			// Sampling content is the model's input: refuse rather than
			// replace what the version cannot carry.
			if p != nil && v < version20250326 && slices.ContainsFunc(p.Messages, func(m *mcp.SamplingMessage) bool {
				_, audio := m.Content.(*mcp.AudioContent)
				return audio
			}) {
				return nil, fmt.Errorf("the client does not support audio in sampling: the session's protocol version %s has no audio content (it came with %s)", v, version20250326)
			}
		case *mcp.ProgressNotificationParams:
			if p != nil && p.Message != "" && v < version20250326 {
				q := *p
				q.Message = ""
				req = &mcp.ServerRequest[*mcp.ProgressNotificationParams]{Session: ss, Params: &q, Extra: req.GetExtra()}
			}
		}
		return next(ctx, method, req)
	}
}

// modelessElicitParams are elicitation/create params as versions before
// 2025-11-25 define them: without mode (nor the URL mode's url and
// elicitationId).
type modelessElicitParams struct {
	*mcp.ElicitParams
}

func (p *modelessElicitParams) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Meta            mcp.Meta `json:"_meta,omitempty"`
		Message         string   `json:"message"`
		RequestedSchema any      `json:"requestedSchema,omitempty"`
	}{p.Meta, p.Message, p.RequestedSchema})
}
