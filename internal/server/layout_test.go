package server_test

import (
	"go/ast"
	"go/parser"
	"go/token"
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
// sessions, and the edges of the composition root.
var layoutRules = map[string]struct {
	allow     func(path string) bool // imports outside the standard library
	deny      []string               // imports
	selectors []string               // identifiers of imported packages, as pkg.Name
}{
	"core": {
		allow: func(p string) bool {
			return slices.Contains([]string{
				module + "internal/plugin", module + "internal/auth", module + "internal/metrics", module + "internal/catalog", module + "internal/argcheck",
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
				module + "internal/server/core", module + "internal/server/wire", module + "internal/plugin", module + "internal/auth",
			}, p)
		},
	},
	"fastpath": {
		allow: func(p string) bool {
			return !strings.HasPrefix(p, module) || slices.Contains([]string{
				module + "internal/server/core", module + "internal/server/sessions", module + "internal/server/rawjson", module + "internal/server/wire",
			}, p)
		},
	},
	"stateless": {
		allow: func(p string) bool {
			return !strings.HasPrefix(p, module) || slices.Contains([]string{
				module + "internal/server/core", module + "internal/server/sessions", module + "internal/server/fastpath",
				module + "internal/server/rawjson", module + "internal/server/wire", module + "internal/mrtr", module + "internal/plugin", module + "internal/auth",
			}, p)
		},
	},
	"rawjson": {
		allow: func(string) bool { return false },
	},
	// The vocabulary the edges share: nothing of the server but rawjson,
	// and of the go-sdk only its JSON-RPC framing.
	"wire": {
		allow: func(p string) bool {
			return p == module+"internal/server/rawjson" || p == "github.com/modelcontextprotocol/go-sdk/jsonrpc"
		},
	},
}

// TestLayout checks the imports of the core, the edges and rawjson, and
// that the core names no session, transport or JSON-RPC framing.
func TestLayout(t *testing.T) {
	for dir, rule := range layoutRules {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil || len(files) == 0 {
			t.Fatalf("%s: no Go files (%v)", dir, err)
		}
		for _, name := range files {
			if strings.HasSuffix(name, "_test.go") {
				continue
			}
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			for _, imp := range f.Imports {
				path, _ := strconv.Unquote(imp.Path.Value)
				std := !strings.Contains(strings.Split(path, "/")[0], ".")
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
