// Package stateless declares that a Hangar plugin keeps no state between
// calls. Import it for its side effect in the plugin's main package:
//
//	import _ "github.com/hangar-mcp/hangar/pdk/stateless"
//
// The import makes the module export the function hangar_stateless, which
// Hangar never calls: its presence tells Hangar that any instance of the
// plugin can serve any call, so that it may run several at once (one per
// core, unless limits.max_instances says otherwise). Without it a plugin
// gets one instance, so that state it keeps in memory (tools registered at
// run time, caches, counters) is the same for every call.
//
// Import it only if every call's result depends on nothing but its request,
// the plugin's configuration, its grants and its Extism variables (which
// Hangar shares between instances): not on package variables a previous
// call changed, nor on tools, resources or prompts registered after init.
//
// Plugins in other languages declare the same by exporting a function
// named hangar_stateless (see docs/abi.md).
package stateless
