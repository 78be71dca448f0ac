#!/usr/bin/env bash
# Runs the official MCP conformance suite (@modelcontextprotocol/conformance,
# every scenario, no expected failures) against `hangar serve --http` with
# the conformance fixture plugin, both built from source here.
set -euo pipefail
cd "$(dirname "$0")/.."

node=test/node/node_modules/node/bin/node
suite=test/node/node_modules/@modelcontextprotocol/conformance/dist/index.js
[ -x "$node" ] && [ -f "$suite" ] || { echo "conformance: run scripts/deps.sh first" >&2; exit 1; }

work=$(mktemp -d)
pid=""
cleanup() {
	[ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT

go build -o "$work/hangar" ./cmd/hangar
GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o "$work/conformance.wasm" ./examples/conformance

# Port 0: the kernel picks a free port, which hangar logs.
"$work/hangar" serve --http 127.0.0.1:0 --cache-dir "$work/cache" "$work/conformance.wasm" 2>"$work/hangar.log" &
pid=$!
url=""
for _ in $(seq 1 100); do
	url=$(grep -o 'http://127\.0\.0\.1:[0-9]*/mcp' "$work/hangar.log" | head -n1 || true)
	[ -n "$url" ] && break
	kill -0 "$pid" 2>/dev/null || break
	sleep 0.1
done
if [ -z "$url" ]; then
	echo "conformance: hangar did not start:" >&2
	cat "$work/hangar.log" >&2
	exit 1
fi

status=0
"$node" "$suite" server --url "$url" --suite all | tee "$work/result.txt" || status=$?
if [ "$status" != 0 ] || ! grep -Eq '^Total: [0-9]+ passed, 0 failed' "$work/result.txt"; then
	echo "conformance: failures (hangar log follows)" >&2
	cat "$work/hangar.log" >&2
	exit 1
fi
