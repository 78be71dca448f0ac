package pdk

import "testing"

// The hooks of the tests of package pdk_test (panic_ext_test.go), whose
// handlers are outside this package, as a plugin's are.

// WithTestRegistry gives the test a fresh package registry.
func WithTestRegistry(t *testing.T) { withRegistry(t) }

// InvokeExport serves export with input on the package registry.
func InvokeExport(export, input string) (string, error) {
	out, err := plugin.invoke(&fakeHost{}, export, []byte(input))
	return string(out), err
}
