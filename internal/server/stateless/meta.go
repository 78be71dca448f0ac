package stateless

import (
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hangar-mcp/hangar/internal/mrtr"
	"github.com/hangar-mcp/hangar/internal/server/core"
	"github.com/hangar-mcp/hangar/internal/server/sessions"
)

// MCP's error codes of 2026-07-28 (basic/index, "Error Codes").
const (
	CodeHeaderMismatch                  = -32020
	CodeMissingRequiredClientCapability = mrtr.CodeMissingRequiredClientCapability // -32021
	CodeUnsupportedProtocolVersion      = -32022
)

// Version is the protocol version this edge serves.
const Version = core.Version20260728

// SupportedVersions are the protocol versions Hangar speaks, newest first:
// 2026-07-28 per request, the older ones in sessions (initialize). An
// UnsupportedProtocolVersionError and server/discover name them.
func SupportedVersions() []string {
	return append([]string{Version}, sessions.ProtocolVersions()...)
}

// reqMeta is what the _meta of a request says of it.
type reqMeta struct {
	version  string
	caps     *mcp.ClientCapabilities
	logLevel mcp.LoggingLevel // "" if none: no log messages
}

// levels ranks the log levels, as the go-sdk does; a level it does not
// know ranks as debug.
var levels = map[mcp.LoggingLevel]int{
	"debug": 0, "info": 1, "notice": 2, "warning": 3, "error": 4, "critical": 5, "alert": 6, "emergency": 7,
}

// invalidParams is a JSON-RPC invalid params error.
func invalidParams(format string, args ...any) *jsonrpc.Error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf(format, args...)}
}

// checkMeta checks the per-request protocol fields of a request's _meta
// (raw, nil if absent): the protocol version (present, and one Hangar
// serves without a session), the client's capabilities (present, an
// object), its clientInfo (if present, an Implementation) and log level
// (if present, a level MCP names). A request without the required fields
// is malformed: invalid params; a version Hangar does not serve this way
// is an UnsupportedProtocolVersionError naming those it does.
func checkMeta(raw json.RawMessage) (*reqMeta, *jsonrpc.Error) {
	var fields map[string]json.RawMessage
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &fields); err != nil {
			return nil, invalidParams("params._meta must be an object: %v", err)
		}
	}
	var version string
	if v, ok := fields[sessions.MetaProtocolVersion]; !ok || json.Unmarshal(v, &version) != nil || version == "" {
		return nil, invalidParams("missing or invalid _meta field %q: a request of MCP %s carries its protocol version in params._meta", sessions.MetaProtocolVersion, Version)
	}
	if version != Version {
		return nil, unsupportedVersion(version)
	}
	rm := &reqMeta{version: version}
	c := nonNull(fields[sessions.MetaClientCapabilities])
	if len(c) == 0 || c[0] != '{' {
		return nil, invalidParams("missing or invalid _meta field %q: a request of MCP %s declares the client's capabilities in params._meta (an object, {} for none)", sessions.MetaClientCapabilities, Version)
	}
	caps, err := mrtr.DecodeCapabilities(c)
	if err != nil {
		return nil, invalidParams("invalid _meta field %q: %v", sessions.MetaClientCapabilities, err)
	}
	rm.caps = caps
	if v, ok := fields[sessions.MetaClientInfo]; ok {
		var info mcp.Implementation
		if v = nonNull(v); len(v) == 0 || v[0] != '{' || json.Unmarshal(v, &info) != nil {
			return nil, invalidParams("invalid _meta field %q: want an object with the client's name and version", sessions.MetaClientInfo)
		}
	}
	if v, ok := fields[sessions.MetaLogLevel]; ok {
		var level mcp.LoggingLevel
		if json.Unmarshal(v, &level) != nil {
			return nil, invalidParams("invalid _meta field %q: want a log level (debug, info, notice, warning, error, critical, alert or emergency)", sessions.MetaLogLevel)
		}
		if _, known := levels[level]; !known {
			return nil, invalidParams("invalid _meta field %q: %q is not a log level (debug, info, notice, warning, error, critical, alert or emergency)", sessions.MetaLogLevel, level)
		}
		rm.logLevel = level
	}
	return rm, nil
}

// unsupportedVersion is MCP's UnsupportedProtocolVersionError.
func unsupportedVersion(requested string) *jsonrpc.Error {
	data, _ := json.Marshal(mcp.UnsupportedProtocolVersionData{Supported: SupportedVersions(), Requested: requested})
	return &jsonrpc.Error{
		Code:    CodeUnsupportedProtocolVersion,
		Message: fmt.Sprintf("unsupported protocol version %q: this server serves %s per request, and older versions in sessions that start with initialize", requested, Version),
		Data:    data,
	}
}

// logs reports whether a log message at level goes to a request whose
// _meta asked for min ("" asked for none).
func logs(min, level mcp.LoggingLevel) bool {
	return min != "" && levels[level] >= levels[min]
}
