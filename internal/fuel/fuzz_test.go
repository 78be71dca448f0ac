package fuel_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"

	"github.com/hangar-mcp/hangar/internal/fuel"
)

// FuzzRewrite mutates valid modules. Rewrite must never panic; what it
// accepts, it must keep valid when the original is valid and invalid when
// the original is not (so that a malformed module cannot become one that
// reaches the counter or the import).
func FuzzRewrite(f *testing.F) {
	for _, tc := range roundTrips {
		f.Add(wat(f, tc.src, tc.flags...))
	}
	f.Add(wat(f, `(module
  (import "env" "add1000" (func (param i32) (result i32)))
  (global (mut i32) (i32.const 0))
  (table 2 funcref)
  (elem (i32.const 0) func 1 0)
  (func (export "f") (param i32) (result i32)
    (global.set 0 (call 0 (local.get 0)))
    (call_indirect (param i32) (result i32) (global.get 0) (i32.const 1)))
  (start 2)
  (func (drop (call 1 (i32.const 3)))))`, "--debug-names"))
	ctx := context.Background()
	cfg := wazero.NewRuntimeConfigInterpreter().WithCoreFeatures(api.CoreFeaturesV2 | experimental.CoreFeaturesThreads)
	rt := wazero.NewRuntimeWithConfig(ctx, cfg)
	f.Cleanup(func() { rt.Close(ctx) })
	f.Fuzz(func(t *testing.T, wasm []byte) {
		out, err := fuel.Rewrite(wasm)
		if err != nil {
			if !errors.Is(err, fuel.ErrInvalid) && !errors.Is(err, fuel.ErrUnsupported) {
				t.Fatalf("error of no kind: %v", err)
			}
			return
		}
		_, errOrig := rt.CompileModule(ctx, wasm)
		_, errOut := rt.CompileModule(ctx, out)
		// wazero misreads an empty custom section at the very end of a
		// module, which the rewrite moves away from the end; that is the
		// one difference allowed.
		if errOrig != nil && errOut == nil && strings.Contains(errOrig.Error(), "custom section") {
			return
		}
		if (errOrig == nil) != (errOut == nil) {
			t.Fatalf("original compiles: %v; rewritten: %v", errOrig, errOut)
		}
	})
}
