package wire

import (
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The versions of the go-sdk's sessions: those that start with
// initialize, up to 2025-11-25. From 2026-07-28 on there are no sessions:
// the go-sdk server speaks that version too, request by request, when
// the edge of that version hooks into it, and initialize still answers
// 2025-11-25 to a client that asks for it.

// lastSessionVersion is the newest protocol version with sessions.
const lastSessionVersion = Version20251125

// SessionVersions returns the protocol versions the sessions speak: the
// go-sdk's up to 2025-11-25 (lastSessionVersion), newest first as the
// go-sdk lists them. A version the go-sdk adds after 2025-11-25 is not
// one of them, even one before 2026-07-28: InitializedVersion would not
// name it, and Hangar knows nothing of how it differs (TestSessionVersions
// pins the list).
func SessionVersions() []string {
	var vs []string
	for _, v := range mcp.SupportedProtocolVersions() {
		if v == lastSessionVersion || Before(v, lastSessionVersion) {
			vs = append(vs, v)
		}
	}
	return vs
}

// sessionVersions is SessionVersions, once.
var sessionVersions = SessionVersions()

// InSessions reports whether the sessions speak protocol version v.
func InSessions(v string) bool { return slices.Contains(sessionVersions, v) }

// SessionVersion is the protocol version ss negotiated, or "" before
// initialize (or if ss is nil). The go-sdk answers initialize with the
// version the client asked for if the server speaks it, and with the
// latest it speaks otherwise; the sessions speak SessionVersions.
func SessionVersion(ss *mcp.ServerSession) string {
	if ss == nil {
		return ""
	}
	return InitializedVersion(ss.InitializeParams())
}

// InitializedVersion is the protocol version of a session initialized
// with p, or "" if p is nil.
func InitializedVersion(p *mcp.InitializeParams) string {
	if p == nil {
		return ""
	}
	if InSessions(p.ProtocolVersion) {
		return p.ProtocolVersion
	}
	return lastSessionVersion
}
