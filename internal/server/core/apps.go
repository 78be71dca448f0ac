package core

import (
	"bytes"
	"fmt"
	"html"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hangar-mcp/hangar/internal/plugin"

	"github.com/hangar-mcp/hangar/internal/server/wire"
)

// MCP Apps (io.modelcontextprotocol/ui): a plugin's tool may name a view, a
// ui:// resource of type wire.AppMIMEType that a host renders in a
// sandboxed frame. Hangar passes the tools' and the views' _meta.ui
// through as the plugin declared it, with three exceptions:
//
//   - under a prefix, view URIs are exposed as ui://P+rest (exposedURI),
//     in tools' _meta too (withExposedUI);
//   - under a prefix, a view is told the prefix of its tools' names by a
//     <meta> Hangar puts in its HTML (withToolPrefix);
//   - a client that is not a UI host (UIHost) neither sees nor may call the
//     tools meant only for views (appOnly).
//
// And a view is bounded in size (MaxView).

// uiScheme starts the URI of every view.
const uiScheme = "ui://"

// MaxView bounds the size of a view's HTML, as the plugin returns it (the
// decoded bytes of a blob). A view is a page a host loads into a frame, and
// every host loads it whole before it shows anything: 4 MiB is far more
// than a page with its scripts inlined needs, and a quarter of the default
// limits.max_output, so that a view past it fails clearly rather than as
// a plugin's output past that limit.
const MaxView = 4 << 20

// UIHost reports whether caps, a client's capabilities (nil for none),
// declare the MCP Apps extension with the MIME type of views: a host that
// renders views and keeps tools meant only for them from its model.
func UIHost(caps *mcp.ClientCapabilities) bool {
	if caps == nil {
		return false
	}
	ext, _ := caps.Extensions[wire.ExtensionUI].(map[string]any)
	switch types := ext["mimeTypes"].(type) {
	case []any:
		return slices.Contains(types, any(wire.AppMIMEType))
	case []string:
		return slices.Contains(types, wire.AppMIMEType)
	}
	return false
}

// appOnly reports whether t is meant only for views: its _meta.ui has a
// visibility that does not include "model". A visibility that is not a
// list of strings is taken as the extension's default (model and app).
func appOnly(t *mcp.Tool) bool {
	ui, _ := t.Meta[wire.MetaUI].(map[string]any)
	switch vs := ui["visibility"].(type) {
	case []any:
		for _, v := range vs {
			if _, ok := v.(string); !ok {
				return false
			}
		}
		return !slices.Contains(vs, any("model"))
	case []string:
		return !slices.Contains(vs, "model")
	}
	return false
}

// withExposedUI returns t with the view URIs of its _meta (_meta.ui's
// resourceUri and the flat wire.MetaUIResourceURI) as clients see them
// under m's prefix; a copy if any changes, where the maps on the way are
// copied too: t is the plugin's lists', left as it is. A URI that is not
// a string starting with ui:// is left as it is, with a warning, once:
// hosts refuse it.
func (m *mount) withExposedUI(t *mcp.Tool) *mcp.Tool {
	if m.Prefix == "" || t.Meta == nil {
		return t
	}
	expose := func(v any) (any, bool) {
		u, ok := v.(string)
		if !ok || len(u) <= len(uiScheme) || u[:len(uiScheme)] != uiScheme {
			m.warn(Tools, t.Name, fmt.Sprintf("its view's URI %v does not start with %s, so it is not exposed under the prefix", v, uiScheme))
			return v, false
		}
		return m.exposedURI(u), true
	}
	var c *mcp.Tool
	copied := func() *mcp.Tool {
		if c == nil {
			cp := *t
			cp.Meta = mcp.Meta{}
			for k, v := range t.Meta {
				cp.Meta[k] = v
			}
			c = &cp
		}
		return c
	}
	if ui, ok := t.Meta[wire.MetaUI].(map[string]any); ok {
		if v, present := ui["resourceUri"]; present {
			if u, ok := expose(v); ok {
				nui := make(map[string]any, len(ui))
				for k, v := range ui {
					nui[k] = v
				}
				nui["resourceUri"] = u
				copied().Meta[wire.MetaUI] = nui
			}
		}
	}
	if v, present := t.Meta[wire.MetaUIResourceURI]; present {
		if u, ok := expose(v); ok {
			copied().Meta[wire.MetaUIResourceURI] = u
		}
	}
	if c == nil {
		return t
	}
	return c
}

// isView reports whether c is a view's contents.
func isView(c *mcp.ResourceContents) bool {
	return c.MIMEType == wire.AppMIMEType
}

// checkView refuses a view past MaxView, with a log entry once for the
// plugin's URI.
func (m *mount) checkView(uri string, c *mcp.ResourceContents) error {
	n := len(c.Text) + len(c.Blob)
	if n <= MaxView {
		return nil
	}
	if m.logOnce(Resources, "view\x00"+uri) {
		m.core.log.Error("refusing the plugin's view: it is larger than a view may be", "uri", shorten(uri), "bytes", n, "max", MaxView, "plugin", m.name)
	}
	return fmt.Errorf("%w: view %s of plugin %s is %d bytes, more than the %d a view may be", plugin.ErrOutputTooLarge, uri, m.name, n, MaxView)
}

// withToolPrefix puts, in the HTML of a prefixed plugin's view, a
// <meta name=wire.MetaToolPrefix> whose content is the prefix of the
// plugin's tools' names as clients see them (the view calls its tools by
// those names): after the first <head> tag, or at the start if there is
// none. An unprefixed plugin's view is left as it is.
func (m *mount) withToolPrefix(c *mcp.ResourceContents) {
	if m.Prefix == "" || !isView(c) {
		return
	}
	tag := []byte(`<meta name="` + wire.MetaToolPrefix + `" content="` + html.EscapeString(m.exposedName("")) + `">`)
	if c.Blob != nil {
		c.Blob = insertAfterHead(c.Blob, tag)
	} else {
		c.Text = string(insertAfterHead([]byte(c.Text), tag))
	}
}

// insertAfterHead returns a copy of doc with tag after its first <head>
// tag (with attributes or not, in any case), or before doc if it has
// none.
func insertAfterHead(doc, tag []byte) []byte {
	at := 0
	lower := bytes.ToLower(doc)
	for from := 0; ; {
		i := bytes.Index(lower[from:], []byte("<head"))
		if i < 0 {
			break
		}
		i += from
		end := i + len("<head")
		// <head> or <head attr...>, not <header>.
		if end < len(lower) && (lower[end] == '>' || lower[end] == '/' || isHTMLSpace(lower[end])) {
			if gt := bytes.IndexByte(lower[end:], '>'); gt >= 0 {
				at = end + gt + 1
			}
			break
		}
		from = end
	}
	out := make([]byte, 0, len(doc)+len(tag))
	out = append(out, doc[:at]...)
	out = append(out, tag...)
	return append(out, doc[at:]...)
}

func isHTMLSpace(b byte) bool {
	return b == ' ' || b == '\t' || b == '\n' || b == '\f' || b == '\r'
}
