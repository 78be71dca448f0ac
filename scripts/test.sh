#!/usr/bin/env bash
# Runs all of Hangar's tests: vet, the Go tests (which build the example and
# test plugins from source and drive them with real MCP clients), scripted
# TypeScript-SDK clients against the hangar binary over stdio and HTTP, and
# the official MCP conformance suite against `hangar serve` with the
# conformance fixture plugin. Installs what it needs first (scripts/deps.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/deps.sh
export PATH="$PWD/test/node/node_modules/node/bin:$PATH" # Node 22
export HANGAR_TEST_REGISTRY="$PWD/test/bin/registry"     # built by deps.sh

echo "== go vet" >&2
go vet ./...
GOOS=wasip1 GOARCH=wasm go vet ./pdk/... ./examples/... ./internal/testplugins/...

echo "== go test" >&2
go test -race -count=1 ./...

echo "== fuzz (bounded)" >&2
# Each target runs a fixed number of inputs (about 20 s each here) on top of
# its seed corpus; a crash fails the run and leaves the input under
# testdata/fuzz. Counts, not durations: with Go 1.26 a duration can end in a
# spurious "context deadline exceeded" (go.dev/issue/75804, fixed in Go
# 1.27). HANGAR_FUZZTIME overrides every count (say 10m, or 1000000x).
fuzz() { # target package count
	go test -run '^$' -fuzz "^$1\$" -fuzztime "${HANGAR_FUZZTIME:-$3}" "$2"
}
fuzz FuzzJSONRPC ./internal/server 300x
fuzz FuzzParseMessage ./internal/server 200000x
fuzz FuzzToolResult ./internal/plugin 200000x
fuzz FuzzSimpleSchema ./internal/server 200000x
fuzz FuzzPlainResult ./internal/server 100000x
fuzz FuzzPluginOutput ./internal/plugin 20000x
fuzz FuzzHostAllowed ./internal/plugin 150000x
fuzz FuzzSplitEnvelope ./pdk 1000000x
fuzz FuzzAppendTextResult ./pdk 100000x

echo "== scripted MCP clients (Node)" >&2
(cd test/node && node --test)

echo "== conformance" >&2
scripts/conformance.sh
