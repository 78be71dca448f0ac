package server_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/hangar-mcp/hangar/"

// layoutRules are what each package of the server may use, as their
// package docs say: the compiler keeps the edges and the core from
// importing each other in a circle; these keep the core free of wires and
// sessions, the edges of the composition root, and package mrtr, which
// the core holds its calls with, free of transports.
var layoutRules = map[string]struct {
	allow     func(path string) bool // imports outside the standard library
	deny      []string               // imports
	selectors []string               // identifiers of imported packages, as pkg.Name
}{
	"core": {
		allow: func(p string) bool {
			return slices.Contains([]string{
				module + "internal/plugin", module + "internal/auth", module + "internal/metrics", module + "internal/catalog", module + "internal/argcheck",
				// The core holds the calls of 2026-07-28 that wait for the
				// client (held.go): it starts them in package mrtr, and
				// makes tasks of them with package tasks.
				module + "internal/mrtr", module + "internal/tasks",
				module + "internal/server/rawjson", module + "internal/server/wire",
				"github.com/modelcontextprotocol/go-sdk/mcp", "github.com/modelcontextprotocol/go-sdk/jsonrpc", "github.com/modelcontextprotocol/go-sdk/auth",
				"github.com/google/jsonschema-go/jsonschema", "github.com/yosida95/uritemplate/v3",
			}, p) || strings.HasPrefix(p, "go.opentelemetry.io/otel")
		},
		deny: []string{"net", "net/http", "io", "bufio", "os"},
		selectors: []string{
			"mcp.ServerSession", "mcp.ClientSession", "mcp.Server", "mcp.NewServer", "mcp.Transport", "mcp.Connection",
			"mcp.RequestExtra", "mcp.ServerRequest", "mcp.IOTransport",
			"jsonrpc.ID", "jsonrpc.Message", "jsonrpc.Request", "jsonrpc.Response", "jsonrpc.EncodeMessage", "jsonrpc.DecodeMessage",
		},
	},
	"sessions": {
		allow: func(p string) bool {
			return !strings.HasPrefix(p, module) || slices.Contains([]string{
				module + "internal/server/core", module + "internal/server/wire", module + "internal/server/httpcalls", module + "internal/plugin", module + "internal/auth",
			}, p)
		},
	},
	"fastpath": {
		allow: func(p string) bool {
			return !strings.HasPrefix(p, module) || slices.Contains([]string{
				module + "internal/server/core", module + "internal/server/rawjson", module + "internal/server/wire", module + "internal/server/httpcalls",
				module + "internal/workers",
			}, p)
		},
	},
	"stateless": {
		allow: func(p string) bool {
			return !strings.HasPrefix(p, module) || slices.Contains([]string{
				module + "internal/server/core", module + "internal/server/rawjson", module + "internal/server/wire", module + "internal/server/httpcalls",
				module + "internal/server/forward",
				module + "internal/mrtr", module + "internal/plugin", module + "internal/auth", module + "internal/tasks",
			}, p)
		},
	},
	// The HTTP forwarder of retries and task requests to the replica that
	// holds them: HTTP's, used by the 2026 edge; of Hangar only package
	// mrtr (its errors, the syntax of a replica's name).
	"forward": {
		allow: func(p string) bool { return p == module+"internal/mrtr" },
	},
	// Package mrtr holds the parked calls for the core, and knows no
	// transport: forwarding over HTTP is package forward's.
	"../mrtr": {
		allow: func(p string) bool {
			return !strings.HasPrefix(p, module) || p == module+"internal/plugin" || p == module+"internal/workers"
		},
		deny: []string{"net", "net/http", "net/http/httputil", "net/url"},
	},
	"rawjson": {
		allow: func(string) bool { return false },
	},
	// The vocabulary the edges share: nothing of the server but rawjson,
	// and of the go-sdk its JSON-RPC framing and MCP's types.
	"wire": {
		allow: func(p string) bool {
			return slices.Contains([]string{
				module + "internal/server/rawjson", "github.com/modelcontextprotocol/go-sdk/jsonrpc", "github.com/modelcontextprotocol/go-sdk/mcp",
			}, p)
		},
	},
	// The HTTP requests that carry calls, which every edge over HTTP
	// shares: of the server only the core, for its scopes.
	"httpcalls": {
		allow: func(p string) bool { return p == module+"internal/server/core" },
	},
}

// edges are the ways in to the core, each a package of its own: the
// go-sdk's sessions, the fast path in front of them, MCP 2026-07-28
// without sessions, and any edge added later (tasks: it is held to the
// rule as soon as its directory exists). They are peers: no package of
// the server imports an edge but the composition root, package server,
// which wires what one edge needs of another (an interface the edge that
// needs it declares). What two edges share is in a package that imports
// no edge (wire, httpcalls).
var edges = []string{"sessions", "fastpath", "stateless", "tasks"}

// externalTest reports whether f is a file of an external test package
// (its package clause ends in _test): such a package is compiled apart
// from the package it tests, and may wire edges as package server does.
// A test file of the package itself (package fastpath) is compiled into
// it, and is held to its rules.
func externalTest(f *ast.File) bool { return strings.HasSuffix(f.Name.Name, "_test") }

// testSupport are what a test file of a package itself may import besides
// what the package may: the server's test helpers.
var testSupport = []string{module + "internal/server/internal/servertest", module + "internal/config"}

// checkPeers checks that no package under internal/server but package
// server itself imports an edge. Only external test packages (package
// clause ending in _test) are exempt: a test there may wire edges as
// package server does.
func checkPeers(t *testing.T) {
	found := map[string]bool{}
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") {
			return err
		}
		dir := filepath.ToSlash(filepath.Dir(path))
		if dir == "." {
			return nil // the composition root
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		if externalTest(f) {
			return nil
		}
		pkg, _, _ := strings.Cut(dir, "/")
		if slices.Contains(edges, pkg) {
			found[pkg] = true
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			rest, ok := strings.CutPrefix(p, module+"internal/server/")
			if !ok {
				continue
			}
			edge, _, _ := strings.Cut(rest, "/")
			if slices.Contains(edges, edge) && edge != pkg {
				if slices.Contains(edges, pkg) {
					t.Errorf("%s imports the edge %s: edges are peers; declare what %s needs of %s as an interface in %s, and wire it in package server (server.go), or move what they share to a package of shared vocabulary", filepath.ToSlash(path), p, pkg, edge, pkg)
				} else {
					t.Errorf("%s imports the edge %s: only package server, the composition root, imports edges", filepath.ToSlash(path), p)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range edges[:3] {
		if !found[e] {
			t.Errorf("the edge %s has no Go files: update edges", e)
		}
	}
}

// TestLayout checks the imports of the core, the edges and the packages
// they share, that the core names no session, transport or JSON-RPC
// framing, and that no edge imports another (checkPeers). Test files are
// checked too, but for those of external test packages (package clause
// ending in _test), which are compiled apart from the package they test;
// a package's own test files may import the server's test helpers too
// (testSupport).
func TestLayout(t *testing.T) {
	checkPeers(t)
	for dir, rule := range layoutRules {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil || len(files) == 0 {
			t.Fatalf("%s: no Go files (%v)", dir, err)
		}
		for _, name := range files {
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			if externalTest(f) {
				continue
			}
			test := strings.HasSuffix(name, "_test.go")
			for _, imp := range f.Imports {
				path, _ := strconv.Unquote(imp.Path.Value)
				std := !strings.Contains(strings.Split(path, "/")[0], ".")
				if test && slices.Contains(testSupport, path) {
					continue
				}
				if (!std && !rule.allow(path)) || slices.Contains(rule.deny, path) {
					t.Errorf("%s imports %s", filepath.ToSlash(name), path)
				}
			}
			ast.Inspect(f, func(n ast.Node) bool {
				sel, ok := n.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				if x, ok := sel.X.(*ast.Ident); ok && slices.Contains(rule.selectors, x.Name+"."+sel.Sel.Name) {
					t.Errorf("%s uses %s.%s", fset.Position(sel.Pos()), x.Name, sel.Sel.Name)
				}
				return true
			})
		}
	}
}
