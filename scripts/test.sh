#!/usr/bin/env bash
# Runs all of Hangar's tests: vet, the Go tests (which build the example and
# test plugins from source and drive them with real MCP clients), bounded
# fuzzing, the attack suite against the hangar binary (test/attack),
# scripted TypeScript-SDK clients against the hangar binary over stdio and
# HTTP, plugins' interactive views (MCP Apps) in headless Chromium
# (test/node/apps.test.mjs), and the official MCP conformance suite against
# `hangar serve` with the conformance fixture plugin. Installs what it
# needs first (scripts/deps.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/deps.sh
export PATH="$PWD/test/node/node_modules/node/bin:$PATH" # Node 22
export HANGAR_TEST_REGISTRY="$PWD/test/bin/registry"     # built by deps.sh

# The test processes of this run share what they build: each test plugin
# is compiled to WebAssembly, and each module to machine code, once per run
# instead of once per package (see internal/testutil).
HANGAR_TEST_RUN_DIR="$(mktemp -d "${TMPDIR:-/tmp}/hangar-test-run.XXXXXX")"
export HANGAR_TEST_RUN_DIR
attack="" # the attack suite's process, while it runs
trap '[ -z "$attack" ] || { kill "$attack" 2>/dev/null; wait "$attack" 2>/dev/null; }; rm -rf "$HANGAR_TEST_RUN_DIR"' EXIT

# go test's default limit is 10 minutes per package, which the slowest
# packages (internal/plugin, internal/server, with -race) exceed on a busy
# machine: at a load average of about 20 on 2 cores each took 23 minutes.
# 45 minutes leaves room for that, and still ends a test that hangs.
# HANGAR_TEST_TIMEOUT overrides it.
timeout="${HANGAR_TEST_TIMEOUT:-45m}"

# Each step's heading says when it started, for finding the slow ones.
SECONDS=0
step() { echo "== $1 (at $((SECONDS / 60))m$((SECONDS % 60))s)" >&2; }

step "go vet"
go vet ./...
GOOS=wasip1 GOARCH=wasm go vet ./pdk/... ./examples/... ./internal/testplugins/...

step "go test"
go test -race -count=1 -timeout "$timeout" ./...

# The attack suite (test/attack) spends two of its minutes waiting for the
# fetch deadline of two sources that never answer: it runs in the
# background, beside the fuzzing, and its output follows the fuzzing's.
# Its bounds are set for a busy machine.
step "attack suite, in the background"
attack_log="$HANGAR_TEST_RUN_DIR/attack.log"
go build -o "$HANGAR_TEST_RUN_DIR/attack" ./test/attack
"$HANGAR_TEST_RUN_DIR/attack" >"$attack_log" 2>&1 &
attack=$!

step "fuzz (bounded)"
# Each target runs a fixed number of inputs (about 20 s each here) on top of
# its seed corpus; a crash fails the run and leaves the input under
# testdata/fuzz. Counts, not durations: with Go 1.26 a duration can end in a
# spurious "context deadline exceeded" (go.dev/issue/75804, fixed in Go
# 1.27). HANGAR_FUZZTIME overrides every count (say 10m, or 1000000x).
# A target that moved to another package would fuzz nothing and pass: each
# must be listed in its package first.
fuzz() { # target package count
	local listed
	listed="$(go test -list "^$1\$" "$2")"
	grep -qx "$1" <<<"$listed" || { echo "fuzz: no target $1 in $2" >&2; return 1; }
	go test -run '^$' -fuzz "^$1\$" -fuzztime "${HANGAR_FUZZTIME:-$3}" -timeout "$timeout" "$2"
}
fuzz FuzzJSONRPC ./internal/server 300x
fuzz FuzzParseMessage ./internal/server/fastpath 200000x
fuzz FuzzReadMessage ./internal/server/stateless 200000x
fuzz FuzzPlainObject ./internal/server/stateless 60000x
fuzz FuzzScanMeta ./internal/server/stateless 100000x
fuzz FuzzRead ./internal/server/wire 200000x
fuzz FuzzValid ./internal/server/rawjson 100000x
fuzz FuzzToolResult ./internal/plugin 200000x
fuzz FuzzSimpleSchema ./internal/server/core 200000x
fuzz FuzzPlainResult ./internal/server/fastpath 100000x
fuzz FuzzMessage ./internal/argcheck 100000x
fuzz FuzzPluginOutput ./internal/plugin 20000x
fuzz FuzzPlainMapAsMarshalled ./internal/plugin 100000x
fuzz FuzzHostAllowed ./internal/plugin 150000x
fuzz FuzzKernel ./internal/plugin 2000x
fuzz FuzzSplitEnvelope ./pdk 1000000x
fuzz FuzzObject ./pdk/internal/fastjson 200000x
fuzz FuzzAppendTextResult ./pdk 100000x
fuzz FuzzAppendStructuredResult ./pdk 100000x
fuzz FuzzURITemplate ./pdk 200000x
fuzz FuzzSkip ./pdk/internal/fastjson 300000x
fuzz FuzzBind ./pdk/internal/fastjson 300000x
fuzz FuzzAppendString ./pdk/internal/fastjson 100000x
fuzz FuzzVerbatim ./pdk/internal/fastjson 100000x

step "attack suite"
attack_status=0
wait "$attack" || attack_status=$?
attack=""
cat "$attack_log"
if [ "$attack_status" != 0 ]; then
	echo "attack suite failed (exit $attack_status)" >&2
	exit 1
fi

step "scripted MCP clients and views in Chromium (Node)"
(cd test/node && node --test)

step "conformance"
scripts/conformance.sh
step "done"
