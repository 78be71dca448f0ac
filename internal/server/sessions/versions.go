package sessions

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hangar-mcp/hangar/internal/server/core"
	"github.com/hangar-mcp/hangar/internal/server/wire"
)

// Each session is sent nothing its protocol version does not define (see
// the versions in package core): the core adapts the content of results to
// a request's version, and the middleware here adapts the rest, the
// initialize result and what the server sends a session.
const (
	version20241105 = core.Version20241105
	version20250326 = core.Version20250326
	version20250618 = core.Version20250618
	version20251125 = core.Version20251125
)

// serverSession is the server session a request belongs to, or nil.
func serverSession(req mcp.Request) *mcp.ServerSession {
	ss, _ := req.GetSession().(*mcp.ServerSession)
	return ss
}

// adaptResults is receiving middleware: it removes from the initialize
// result what the session's protocol version lacks. (The core adapts the
// content of the results it returns.)
func adaptResults(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if err != nil || res == nil {
			return res, err
		}
		if res, ok := res.(*mcp.InitializeResult); ok && res.Capabilities != nil {
			res.Capabilities = core.CapabilitiesFor(res.ProtocolVersion, res.Capabilities)
		}
		return res, nil
	}
}

// adaptRequests is sending middleware: it removes from the requests and
// notifications sent to a session what the session's protocol version
// lacks.
func adaptRequests(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		ss := serverSession(req)
		v := wire.SessionVersion(ss)
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
