package core

import (
	"bytes"
	"errors"
	"log/slog"
	"reflect"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hangar-mcp/hangar/internal/plugin"
	"github.com/hangar-mcp/hangar/internal/server/wire"
)

func testMount(prefix string) *mount {
	return &mount{Mount: Mount{Prefix: prefix}, name: "p", core: New(nil)}
}

func TestExposedURIRoundTrip(t *testing.T) {
	for _, c := range []struct{ prefix, uri, exposed string }{
		{"alpha", "ui://dashboard", "ui://alpha+dashboard"},
		{"alpha", "ui://dashboard/{id}", "ui://alpha+dashboard/{id}"},
		{"alpha", "ui://alpha+x", "ui://alpha+alpha+x"},
		{"alpha", "notes://a", "alpha+notes://a"},
		{"alpha", "uix://a", "alpha+uix://a"},
		{"", "ui://dashboard", "ui://dashboard"},
		{"", "notes://a", "notes://a"},
	} {
		m := testMount(c.prefix)
		if got := m.exposedURI(c.uri); got != c.exposed {
			t.Errorf("prefix %q: exposedURI(%q) = %q, want %q", c.prefix, c.uri, got, c.exposed)
		}
		if got := m.pluginURI(c.exposed); got != c.uri {
			t.Errorf("prefix %q: pluginURI(%q) = %q, want %q", c.prefix, c.exposed, got, c.uri)
		}
	}
}

func TestCarriedPrefixOfViews(t *testing.T) {
	for _, c := range []struct {
		kind      Kind
		key, want string
	}{
		{Resources, "ui://alpha+dashboard", "alpha"},
		{Templates, "ui://alpha+dashboard/{id}", "alpha"},
		{Resources, "ui://dashboard", ""},
		{Resources, "alpha+notes://a", "alpha"},
		{Tools, "alpha_show", "alpha"},
	} {
		if got := carriedPrefix(c.kind, c.key); got != c.want {
			t.Errorf("carriedPrefix(%v, %q) = %q, want %q", c.kind, c.key, got, c.want)
		}
	}
}

func TestWithExposedUI(t *testing.T) {
	ui := map[string]any{"resourceUri": "ui://dashboard", "visibility": []any{"app"}, "csp": map[string]any{"connectDomains": []any{"https://a"}}}
	orig := &mcp.Tool{Name: "show", Meta: mcp.Meta{wire.MetaUI: ui, wire.MetaUIResourceURI: "ui://dashboard", "k": "v"}}
	snapshot := func() mcp.Meta {
		return mcp.Meta{wire.MetaUI: map[string]any{"resourceUri": "ui://dashboard", "visibility": []any{"app"}, "csp": map[string]any{"connectDomains": []any{"https://a"}}}, wire.MetaUIResourceURI: "ui://dashboard", "k": "v"}
	}
	got := testMount("alpha").withExposedUI(orig)
	if !reflect.DeepEqual(orig.Meta, snapshot()) {
		t.Errorf("the plugin's tool changed: %v", orig.Meta)
	}
	want := snapshot()
	want[wire.MetaUI].(map[string]any)["resourceUri"] = "ui://alpha+dashboard"
	want[wire.MetaUIResourceURI] = "ui://alpha+dashboard"
	if !reflect.DeepEqual(got.Meta, want) {
		t.Errorf("exposed _meta %v, want %v", got.Meta, want)
	}
	if got := testMount("").withExposedUI(orig); got != orig {
		t.Error("an unprefixed tool was copied")
	}
	odd := &mcp.Tool{Name: "odd", Meta: mcp.Meta{wire.MetaUI: map[string]any{"resourceUri": 7}}}
	if got := testMount("alpha").withExposedUI(odd); got != odd {
		t.Errorf("a tool with a URI that is not a string was changed: %v", got.Meta)
	}
}

func TestWithToolPrefix(t *testing.T) {
	const tag = `<meta name="com.github.hangar-mcp/tool-prefix" content="alpha_">`
	for _, c := range []struct{ in, want string }{
		{`<html><head><title>x</title></head></html>`, `<html><head>` + tag + `<title>x</title></head></html>`},
		{`<!-- <header> --><HEAD lang="en">x`, `<!-- <header> --><HEAD lang="en">` + tag + `x`},
		{"<head\n>x", "<head\n>" + tag + "x"},
		{`<p>no head</p>`, tag + `<p>no head</p>`},
		{`<header>x</header>`, tag + `<header>x</header>`},
		{`<head`, tag + `<head`},
		{``, tag},
	} {
		text := &mcp.ResourceContents{MIMEType: wire.AppMIMEType, Text: c.in}
		testMount("alpha").withToolPrefix(text)
		if text.Text != c.want {
			t.Errorf("text %q: got %q, want %q", c.in, text.Text, c.want)
		}
		blob := &mcp.ResourceContents{MIMEType: wire.AppMIMEType, Blob: []byte(c.in)}
		testMount("alpha").withToolPrefix(blob)
		if string(blob.Blob) != c.want || blob.Text != "" {
			t.Errorf("blob %q: got %q, want %q", c.in, blob.Blob, c.want)
		}
	}
	for _, prefix := range []string{"", "alpha"} {
		mime := wire.AppMIMEType
		if prefix != "" {
			mime = "text/html"
		}
		c := &mcp.ResourceContents{MIMEType: mime, Text: "<head>x"}
		testMount(prefix).withToolPrefix(c)
		if c.Text != "<head>x" {
			t.Errorf("prefix %q, type %s: changed to %q", prefix, mime, c.Text)
		}
	}
}

func TestUIHostAndAppOnly(t *testing.T) {
	for _, c := range []struct {
		caps *mcp.ClientCapabilities
		want bool
	}{
		{nil, false},
		{&mcp.ClientCapabilities{}, false},
		{&mcp.ClientCapabilities{Extensions: map[string]any{wire.ExtensionUI: map[string]any{}}}, false},
		{&mcp.ClientCapabilities{Extensions: map[string]any{wire.ExtensionUI: map[string]any{"mimeTypes": []any{"text/html"}}}}, false},
		{&mcp.ClientCapabilities{Extensions: map[string]any{wire.ExtensionUI: map[string]any{"mimeTypes": []any{"text/html", wire.AppMIMEType}}}}, true},
		{&mcp.ClientCapabilities{Extensions: map[string]any{wire.ExtensionUI: map[string]any{"mimeTypes": []string{wire.AppMIMEType}}}}, true},
	} {
		if got := UIHost(c.caps); got != c.want {
			t.Errorf("UIHost(%+v) = %v", c.caps, got)
		}
	}
	for _, c := range []struct {
		meta mcp.Meta
		want bool
	}{
		{nil, false},
		{mcp.Meta{wire.MetaUI: map[string]any{"resourceUri": "ui://x"}}, false},
		{mcp.Meta{wire.MetaUI: map[string]any{"visibility": []any{"app"}}}, true},
		{mcp.Meta{wire.MetaUI: map[string]any{"visibility": []any{}}}, true},
		{mcp.Meta{wire.MetaUI: map[string]any{"visibility": []any{"app", "model"}}}, false},
		{mcp.Meta{wire.MetaUI: map[string]any{"visibility": []string{"app"}}}, true},
		{mcp.Meta{wire.MetaUI: map[string]any{"visibility": "app"}}, false},
		{mcp.Meta{wire.MetaUI: map[string]any{"visibility": []any{1}}}, false},
	} {
		if got := appOnly(&mcp.Tool{Meta: c.meta}); got != c.want {
			t.Errorf("appOnly(%v) = %v", c.meta, got)
		}
	}
}

func TestCheckViewBoundLogsOnce(t *testing.T) {
	var log bytes.Buffer
	m := &mount{Mount: Mount{Prefix: "alpha"}, name: "p", core: New(&Options{Logger: slog.New(slog.NewTextHandler(&log, nil))})}
	if err := m.checkView("ui://ok", &mcp.ResourceContents{MIMEType: wire.AppMIMEType, Text: strings.Repeat("x", MaxView)}); err != nil {
		t.Errorf("a view of MaxView bytes: %v", err)
	}
	for range 3 {
		err := m.checkView("ui://big", &mcp.ResourceContents{MIMEType: wire.AppMIMEType, Blob: make([]byte, MaxView+1)})
		if !errors.Is(err, plugin.ErrOutputTooLarge) || !strings.Contains(err.Error(), "view ui://big of plugin p is 4194305 bytes") {
			t.Errorf("a view past MaxView: %v", err)
		}
	}
	if n := strings.Count(log.String(), "refusing the plugin's view"); n != 1 {
		t.Errorf("logged %d times:\n%s", n, log.String())
	}
}
