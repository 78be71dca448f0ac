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
# Each target runs for a bounded time on top of its seed corpus; a crash
# fails the run and leaves the input under testdata/fuzz.
fuzztime="${HANGAR_FUZZTIME:-20s}"
go test -run '^$' -fuzz '^FuzzJSONRPC$' -fuzztime "$fuzztime" ./internal/server
go test -run '^$' -fuzz '^FuzzPluginOutput$' -fuzztime "$fuzztime" ./internal/plugin
go test -run '^$' -fuzz '^FuzzHostAllowed$' -fuzztime "$fuzztime" ./internal/plugin
go test -run '^$' -fuzz '^FuzzSplitEnvelope$' -fuzztime "$fuzztime" ./pdk
go test -run '^$' -fuzz '^FuzzAppendTextResult$' -fuzztime "$fuzztime" ./pdk

echo "== scripted MCP clients (Node)" >&2
(cd test/node && node --test)

echo "== conformance" >&2
scripts/conformance.sh
