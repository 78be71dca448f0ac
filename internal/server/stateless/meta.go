package stateless

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"strconv"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hangar-mcp/hangar/internal/mrtr"
	"github.com/hangar-mcp/hangar/internal/server/core"
	"github.com/hangar-mcp/hangar/internal/server/rawjson"
	"github.com/hangar-mcp/hangar/internal/server/wire"
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
	return append([]string{Version}, wire.SessionVersions()...)
}

// reqMeta is what the _meta of a request says of it.
type reqMeta struct {
	meta     mcp.Meta // decoded, as plugins get it: without the edge's framing (pluginMeta)
	metaJSON []byte   // or, read by scanMeta, encoded, as plugins get it (meta is then nil)
	version  string
	caps     *mcp.ClientCapabilities // &capsValue
	logLevel mcp.LoggingLevel        // "" if none: no log messages

	capsValue mcp.ClientCapabilities // what caps points to
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
// is an UnsupportedProtocolVersionError naming those it does. The _meta
// is decoded once, for the checks and for plugins.
func checkMeta(raw json.RawMessage) (*reqMeta, *jsonrpc.Error) {
	meta, err := decodeMeta(raw)
	if err != nil {
		return nil, err
	}
	return checkFields(meta)
}

// decodeMeta decodes a request's _meta (nil if absent): by plainObject
// when it can, with encoding/json otherwise.
func decodeMeta(raw json.RawMessage) (mcp.Meta, *jsonrpc.Error) {
	return decodeChecked(raw, false)
}

// decodeMessageMeta is decodeMeta of m's _meta, which it does not check
// again if readPlain checked the message.
func decodeMessageMeta(m *message) (mcp.Meta, *jsonrpc.Error) {
	return decodeChecked(m.meta, m.checked)
}

// decodeChecked is decodeMeta of raw, known to be valid JSON and UTF-8 if
// checked (plainMembers then skips plainObject's checks). Either way the
// framing member clientInfo is checked in place rather than built
// (checkedInfo): the edge drops it.
func decodeChecked(raw json.RawMessage, checked bool) (mcp.Meta, *jsonrpc.Error) {
	var m map[string]any
	var ok bool
	if checked && len(raw) > 0 && raw[0] == '{' {
		m, ok = plainMembers(raw, true)
	} else {
		m, ok = plainObject(raw, true)
	}
	if ok {
		return m, nil
	}
	var meta mcp.Meta
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &meta); err != nil {
			return nil, invalidParams("params._meta must be an object: %v", err)
		}
	}
	return meta, nil
}

// checkFields is checkMeta of a decoded _meta.
func checkFields(meta mcp.Meta) (*reqMeta, *jsonrpc.Error) {
	version, _ := meta[wire.MetaProtocolVersion].(string)
	if version == "" {
		return nil, invalidParams("missing or invalid _meta field %q: a request of MCP %s carries its protocol version in params._meta", wire.MetaProtocolVersion, Version)
	}
	if version != Version {
		return nil, unsupportedVersion(version)
	}
	rm := &reqMeta{version: version}
	c, ok := meta[wire.MetaClientCapabilities].(map[string]any)
	if !ok {
		return nil, invalidParams("missing or invalid _meta field %q: a request of MCP %s declares the client's capabilities in params._meta (an object, {} for none)", wire.MetaClientCapabilities, Version)
	}
	if err := readCapabilities(c, &rm.capsValue); err != nil {
		return nil, invalidParams("invalid _meta field %q: %v", wire.MetaClientCapabilities, err)
	}
	rm.caps = &rm.capsValue
	if v, present := meta[wire.MetaClientInfo]; present {
		info, ok := v.(map[string]any)
		for _, k := range []string{"name", "version"} {
			if _, isString := info[k].(string); ok && info[k] != nil && !isString {
				ok = false
			}
		}
		if !ok {
			return nil, invalidParams("invalid _meta field %q: want an object with the client's name and version", wire.MetaClientInfo)
		}
	}
	if v, present := meta[wire.MetaLogLevel]; present {
		level, ok := v.(string)
		if !ok {
			return nil, invalidParams("invalid _meta field %q: want a log level (debug, info, notice, warning, error, critical, alert or emergency)", wire.MetaLogLevel)
		}
		if _, known := levels[mcp.LoggingLevel(level)]; !known {
			return nil, invalidParams("invalid _meta field %q: %q is not a log level (debug, info, notice, warning, error, critical, alert or emergency)", wire.MetaLogLevel, level)
		}
		rm.logLevel = mcp.LoggingLevel(level)
	}
	// The map is this edge's own, decoded for this request: the framing
	// goes from it in place.
	rm.meta = dropFraming(meta)
	return rm, nil
}

// scanMeta reads the _meta of m, a tools/call or resources/read the edge
// may serve itself (m.plain, read by readPlain), without decoding it
// into a map, when it holds only what a 2026-07-28
// request carries on every call: the protocol version, this edge's
// (written as it is), the client's capabilities, and its clientInfo and
// log level if any, each once, keys without escapes, and capabilities
// that plainMembers decodes with no key twice in any object and no
// number but an integer written as it is encoded (sameAsEncoded). The checks
// are checkFields's, and plugins get the _meta as checkFields leaves it,
// the capabilities alone, encoded as the client wrote them (rm.metaJSON:
// a JSON object, its members in their order). ok is false for anything
// else, which decodeMessageMeta and checkFields read, errors included.
//
// A map of the _meta, built for each call and encoded again for the
// plugin, was a tenth of the CPU the 2026-07-28 stdio edge adds to a
// call: docs/performance.md.
func scanMeta(m *message) (rm *reqMeta, ok bool) {
	if !m.plain || !m.checked || len(m.meta) == 0 || m.meta[0] != '{' {
		return nil, false
	}
	var version, info, caps, level []byte
	if !rawjson.Object(m.meta, func(key, v []byte) bool {
		var slot *[]byte
		switch string(key) {
		case wire.MetaProtocolVersion:
			slot = &version
		case wire.MetaClientCapabilities:
			slot = &caps
		case wire.MetaClientInfo:
			slot = &info
		case wire.MetaLogLevel:
			slot = &level
		default:
			return false // a member plugins get: decoded
		}
		if *slot != nil {
			return false // twice: checkFields reads the last
		}
		*slot = v
		return true
	}) {
		return nil, false
	}
	if string(version) != `"`+Version+`"` || len(caps) == 0 || caps[0] != '{' {
		return nil, false
	}
	if info != nil && (info[0] != '{' || !checkedInfo(info)) {
		return nil, false
	}
	rm = &reqMeta{version: Version}
	if level != nil {
		l, ok := knownLevel(level)
		if !ok {
			return nil, false
		}
		rm.logLevel = l
	}
	c, ok := plainMembers(caps, false)
	if !ok || !sameAsEncoded(caps, c) || readCapabilities(c, &rm.capsValue) != nil {
		return nil, false
	}
	rm.caps = &rm.capsValue
	const prefix = `{"` + wire.MetaClientCapabilities + `":`
	rm.metaJSON = append(append(append(make([]byte, 0, len(prefix)+len(caps)+1), prefix...), caps...), '}')
	return rm, true
}

// knownLevel returns the log level the JSON string v names, if v is
// written without escapes and names one.
func knownLevel(v []byte) (mcp.LoggingLevel, bool) {
	if len(v) < 2 || v[0] != '"' || bytes.IndexByte(v, '\\') >= 0 {
		return "", false
	}
	for l := range levels {
		if string(l) == string(v[1:len(v)-1]) {
			return l, true
		}
	}
	return "", false
}

// sameAsEncoded reports whether a plugin reads the JSON object v (valid,
// keys without escapes) as it reads m, plainMembers's decoding of it,
// encoded (the plugin package's appendPlainMap, json.Marshal): whether no
// object in v has a key twice (each has as many members as its map holds;
// plainMembers keeps the last, as encoding/json does, and a plugin's
// decoder might read another), and every number in it is an integer of
// at most 15 digits, written as the encoding writes it (1.0 or 1e2 is
// 1 or 100 there, and a plugin that reads an integer refuses them).
func sameAsEncoded(v []byte, m map[string]any) bool {
	n := 0
	return rawjson.Object(v, func(key, v []byte) bool {
		n++
		switch c := v[0]; {
		case c == '{':
			sub, _ := m[string(key)].(map[string]any)
			return sub != nil && sameAsEncoded(v, sub)
		case c == '-' || c >= '0' && c <= '9':
			return plainInteger(v)
		}
		return true
	}) && n == len(m)
}

// plainInteger reports whether the JSON number v is an integer of at most
// 15 digits written as json.Marshal writes its float64: no fraction, no
// exponent, no leading zero, not -0.
func plainInteger(v []byte) bool {
	digits := v
	if v[0] == '-' {
		digits = v[1:]
	}
	if len(digits) == 0 || len(digits) > 15 || digits[0] == '0' && (len(digits) > 1 || len(v) > 1) {
		return false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// framing are the keys of a request's _meta that frame it as a request of
// 2026-07-28, which the edge consumes: its protocol version, the client's
// name and its log level, which an older session's client declares once,
// in initialize and logging/setLevel. The client's capabilities are not
// among them: a plugin may read them to ask only for what the client can
// give (the Go PDK's Context.ClientCapabilities), and the core tells by
// them a client that takes tasks.
var framing = [...]string{wire.MetaProtocolVersion, wire.MetaClientInfo, wire.MetaLogLevel}

// pluginMeta returns the _meta of a request as plugins get it: meta
// without the framing keys, so that a plugin sees the same context at
// every version (docs/abi.md), and a Go guest does not decode, at every
// call, what no plugin reads. meta is not changed: a copy is made if it
// holds any of them.
func pluginMeta(meta mcp.Meta) mcp.Meta {
	for _, k := range framing {
		if _, ok := meta[k]; ok {
			return dropFraming(maps.Clone(meta))
		}
	}
	return meta
}

// dropFraming deletes the framing keys from meta, and returns it.
func dropFraming(meta mcp.Meta) mcp.Meta {
	for _, k := range framing {
		delete(meta, k)
	}
	return meta
}

// capabilities reads the client capabilities of a request's _meta, as
// decoded JSON: what the Manager checks before it asks the client for
// input (sampling and its context, elicitation and its modes, roots), and
// the extensions it declares (the core serves a UI host more tools). A
// capability is declared by an object; absent or null, it is not; any
// other value is an error.
func capabilities(c map[string]any) (*mcp.ClientCapabilities, error) {
	caps := &mcp.ClientCapabilities{}
	if err := readCapabilities(c, caps); err != nil {
		return nil, err
	}
	return caps, nil
}

// readCapabilities is capabilities, read into caps, which must be the
// zero value: checkFields keeps them in the request's reqMeta, one
// allocation less a request.
func readCapabilities(c map[string]any, caps *mcp.ClientCapabilities) error {
	obj := func(m map[string]any, key, where string) (map[string]any, bool, error) {
		v, ok := m[key]
		if !ok || v == nil {
			return nil, false, nil
		}
		o, ok := v.(map[string]any)
		if !ok {
			return nil, false, fmt.Errorf("%s%s must be an object", where, key)
		}
		return o, true, nil
	}
	roots, ok, err := obj(c, "roots", "")
	if err != nil {
		return err
	}
	if ok {
		lc, _ := roots["listChanged"].(bool)
		caps.RootsV2 = &mcp.RootCapabilities{ListChanged: lc}
		caps.Roots.ListChanged = lc
	}
	sampling, ok, err := obj(c, "sampling", "")
	if err != nil {
		return err
	}
	if ok {
		caps.Sampling = &mcp.SamplingCapabilities{}
		if _, ok, err := obj(sampling, "context", "sampling."); err != nil {
			return err
		} else if ok {
			caps.Sampling.Context = &mcp.SamplingContextCapabilities{}
		}
		if _, ok, err := obj(sampling, "tools", "sampling."); err != nil {
			return err
		} else if ok {
			caps.Sampling.Tools = &mcp.SamplingToolsCapabilities{}
		}
	}
	elicitation, ok, err := obj(c, "elicitation", "")
	if err != nil {
		return err
	}
	if ok {
		caps.Elicitation = &mcp.ElicitationCapabilities{}
		if _, ok, err := obj(elicitation, "form", "elicitation."); err != nil {
			return err
		} else if ok {
			caps.Elicitation.Form = &mcp.FormElicitationCapabilities{}
		}
		if _, ok, err := obj(elicitation, "url", "elicitation."); err != nil {
			return err
		} else if ok {
			caps.Elicitation.URL = &mcp.URLElicitationCapabilities{}
		}
	}
	// The extensions the client declares, each by an object of its
	// settings: the core tells a UI host (MCP Apps) by them.
	extensions, ok, err := obj(c, "extensions", "")
	if err != nil {
		return err
	}
	if ok {
		caps.Extensions = make(map[string]any, len(extensions))
		for name := range extensions {
			settings, ok, err := obj(extensions, name, "extensions.")
			if err != nil {
				return err
			}
			if ok {
				caps.Extensions[name] = settings
			}
		}
	}
	return nil
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

// plainObject decodes the JSON object b as json.Unmarshal decodes it into
// a map[string]any, and reports true, when b is valid UTF-8 and JSON and
// holds only objects, strings without escapes, numbers float64 holds, and
// true, false and null; else it reports false, and decodeMeta decodes b
// with encoding/json. Every 2026-07-28 request's _meta is decoded, and
// encoding/json's reflective decoding of its few members was a tenth of a
// stdio tools/call's CPU. top is plainMembers's.
func plainObject(b []byte, top bool) (map[string]any, bool) {
	if len(b) == 0 || b[0] != '{' || !utf8.Valid(b) || !rawjson.Valid(b) {
		return nil, false
	}
	return plainMembers(b, top)
}

// plainMembers is plainObject of an object already checked. With top, b
// is a request's _meta, whose clientInfo, if checkedInfo accepts it, is
// decoded as a nil map (decodeChecked).
func plainMembers(b []byte, top bool) (map[string]any, bool) {
	m := map[string]any{}
	ok := rawjson.Object(b, func(key, v []byte) bool {
		var x any
		switch c := v[0]; {
		case top && c == '{' && string(key) == wire.MetaClientInfo && checkedInfo(v):
			// The edge consumes it (framing), and checkFields asks of it
			// only that it be an object with string names and versions:
			// it is not built. A nil map is such an object.
			x = map[string]any(nil)
		case c == '{':
			o, ok := plainMembers(v, false)
			if !ok {
				return false
			}
			x = o
		case string(v) == `"`+Version+`"`:
			x = Version // every request's protocolVersion: not allocated
		case c == '"':
			s, ok := rawjson.String(v)
			if !ok {
				return false
			}
			x = s
		case c == '-' || c >= '0' && c <= '9':
			n, err := strconv.ParseFloat(string(v), 64)
			if err != nil {
				return false
			}
			x = n
		case string(v) == "true":
			x = true
		case string(v) == "false":
			x = false
		case string(v) == "null":
		default: // an array
			return false
		}
		m[metaKey(key)] = x
		return true
	})
	return m, ok
}

// checkedInfo reports whether the clientInfo object v (valid JSON) is one
// checkFields accepts as plainMembers would decode it: its last "name"
// and "version" members, if any, strings or null. Its other members are
// not read: the edge drops clientInfo before any plugin sees it. It
// reports false for anything else, which plainMembers then decodes, for
// checkFields to refuse with its own words (or plainObject to decline).
func checkedInfo(v []byte) bool {
	ok := true
	return rawjson.Object(v, func(key, v []byte) bool {
		if string(key) == "name" || string(key) == "version" {
			ok = v[0] == '"' || string(v) == "null"
		}
		return true
	}) && ok
}

// metaKey is string(key), but for the keys a 2026-07-28 request's _meta
// carries on every call, which it does not allocate again.
func metaKey(key []byte) string {
	switch string(key) {
	case wire.MetaProtocolVersion:
		return wire.MetaProtocolVersion
	case wire.MetaClientCapabilities:
		return wire.MetaClientCapabilities
	case wire.MetaClientInfo:
		return wire.MetaClientInfo
	case wire.MetaLogLevel:
		return wire.MetaLogLevel
	case "progressToken":
		return "progressToken"
	case "name":
		return "name"
	case "version":
		return "version"
	}
	return string(key)
}
