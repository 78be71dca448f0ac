//go:build wasip1

package stateless

// hangarStateless is the marker Hangar looks for; it is never called.
//
//go:wasmexport hangar_stateless
func hangarStateless() {}
