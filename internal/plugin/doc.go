// Package plugin runs Extism WebAssembly plugins in a sandbox and presents
// every supported plugin interface (v1, servlet, legacy) as one model, in the
// MCP types of github.com/modelcontextprotocol/go-sdk/mcp.
//
// Modules run on wazero. Hangar serves the Extism host functions itself
// (extism:host/env: the Extism memory of each instance, its input and
// output, config, variables, HTTP and logs), computing what Extism's own
// kernel module computes, so that any module built with an Extism PDK runs
// unchanged; see docs/abi.md.
//
// An [Engine] compiles modules, sharing one on-disk compilation cache. A
// compiled [Plugin] owns a bounded pool of instances: an instance is not safe
// for concurrent use, so each call borrows one, and an instance that trapped,
// timed out or was cancelled is discarded rather than returned to the pool.
//
// Every call has a deadline on the time the plugin spends running
// ([Limits.CallTimeout]); time spent waiting for the MCP client inside a host
// import (sampling, elicitation, roots) does not count against it and is
// bounded separately ([Limits.HostTimeout]).
//
// Host imports reach the MCP client through the [Host] of the [Call] that is
// running; plugin-wide events (list changed, resource updated) go to
// the [Events] set with [Plugin.SetEvents].
package plugin
