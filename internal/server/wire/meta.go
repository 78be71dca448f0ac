package wire

import (
	"reflect"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The _meta keys of MCP 2026-07-28's per-request protocol fields.
const (
	MetaProtocolVersion    = "io.modelcontextprotocol/protocolVersion"
	MetaClientCapabilities = "io.modelcontextprotocol/clientCapabilities"
	MetaClientInfo         = "io.modelcontextprotocol/clientInfo"
	MetaLogLevel           = "io.modelcontextprotocol/logLevel"
	MetaServerInfo         = "io.modelcontextprotocol/serverInfo"
	// MetaTask is Hangar's key of a tool's _meta that says when its calls
	// become tasks (pdk.Tool.Task, or the plugin's tasks configuration).
	MetaTask           = "com.github.hangar-mcp/task"
	MetaSubscriptionID = "io.modelcontextprotocol/subscriptionId"
)

// MaxSubscriptions bounds the resources a client may be subscribed to: a
// session (resources/subscribe), or one subscriptions/listen of
// 2026-07-28.
const MaxSubscriptions = 1000

// VersionInMeta reports whether req is a request of MCP 2026-07-28 or
// later: its _meta names the protocol version, as the go-sdk decides.
func VersionInMeta(req mcp.Request) bool {
	p := req.GetParams()
	if p == nil || reflect.ValueOf(p).IsNil() {
		return false
	}
	return MetaNamesVersion(p.GetMeta())
}

// MetaNamesVersion is VersionInMeta of a request's _meta.
func MetaNamesVersion(meta mcp.Meta) bool {
	v, _ := meta[MetaProtocolVersion].(string)
	return AtLeast(v, Version20260728)
}

// The MCP Apps extension (io.modelcontextprotocol/ui): its name in
// capabilities.extensions, the MIME type of a view (a ui:// resource), and
// the _meta keys of a tool's view (ResourceURI and visibility under
// MetaUI; MetaUIResourceURI is the older flat key of the URI, which hosts
// still read). MetaToolPrefix names the <meta> Hangar puts in a prefixed
// plugin's view to tell it the prefix of its tools' names.
const (
	ExtensionUI       = "io.modelcontextprotocol/ui"
	AppMIMEType       = "text/html;profile=mcp-app"
	MetaUI            = "ui"
	MetaUIResourceURI = "ui/resourceUri"
	MetaToolPrefix    = "com.github.hangar-mcp/tool-prefix"
)

// TasksExtension is the tasks extension's name in a client's or server's
// capabilities.extensions.
const TasksExtension = "io.modelcontextprotocol/tasks"

// DeclaresTasks reports whether a request's _meta declares the tasks
// extension among the client's capabilities (an object under extensions).
func DeclaresTasks(meta mcp.Meta) bool {
	c, _ := meta[MetaClientCapabilities].(map[string]any)
	ext, _ := c["extensions"].(map[string]any)
	_, ok := ext[TasksExtension].(map[string]any)
	return ok
}
