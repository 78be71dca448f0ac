#!/usr/bin/env bash
# Runs the official MCP conformance suite (@modelcontextprotocol/conformance,
# the version test/node pins) against `hangar serve --http` with the
# conformance fixture plugin, both built from source here, with no expected
# failures: every check of every scenario run must pass.
#
#  1. The requirement set of MCP 2025-11-25 (--requirements 2025-11-25),
#     at that revision's wire (initialize and sessions).
#  2. The requirement set of MCP 2026-07-28 (--requirements 2026-07-28): the
#     scenarios it scores and those it runs unscored (pending, and the
#     tasks extension's, io.modelcontextprotocol/tasks), at the 2026-07-28
#     wire (per-request _meta, no sessions).
#  3. Every server scenario of the suite (--suite all), each at its default
#     wire.
#
# Each is one run of the suite, as its users run it. A set passes when the
# suite exits 0 and its tally says 0 failed with no failing scenario: the
# suite's exit status leaves out the unscored scenarios of a requirement
# set, which must pass here too. Hangar offers the tasks extension by
# default, so the extension's scenarios must run and pass; the script
# fails if Hangar does not offer it (server/discover).
set -euo pipefail
cd "$(dirname "$0")/.."

node=test/node/node_modules/node/bin/node
pkg=test/node/node_modules/@modelcontextprotocol/conformance
suite=$pkg/dist/index.js
[ -x "$node" ] && [ -f "$suite" ] || { echo "conformance: run scripts/deps.sh first" >&2; exit 1; }
version=$("$node" -p "require('./$pkg/package.json').version")

work=$(mktemp -d)
pid=""
cleanup() {
	[ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT

go build -o "$work/hangar" ./cmd/hangar
GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o "$work/conformance.wasm" ./examples/conformance

# The suite asks for input and often never answers (a scenario checks the
# first input_required result and moves on): each such call stays parked,
# holding an instance of the plugin, until host_timeout. More instances
# than the default (one per core) and a shorter wait keep later scenarios
# from waiting for one, which a scenario that allows 500 ms would not.
#
# A tool of the tasks scenarios that requires a task (failing_job) runs a
# second: a task past tasks.after, which is shorter than the default here.
# Every scenario is one client from one address, which makes more tasks
# than a client may keep by default (a call past the cap is answered
# directly, and the scenarios want tasks).
cat >"$work/hangar.yaml" <<EOF
tasks:
  after: 200ms
  max_tasks_per_client: 1000
plugins:
  - name: conformance
    path: conformance.wasm
    limits:
      max_instances: 16
      host_timeout: 10s
EOF

# Port 0: the kernel picks a free port, which hangar logs.
"$work/hangar" serve --config "$work/hangar.yaml" --http 127.0.0.1:0 --cache-dir "$work/cache" 2>"$work/hangar.log" &
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

fail() {
	echo "conformance: $1 (hangar log follows)" >&2
	cat "$work/hangar.log" >&2
	exit 1
}

# Hangar serves at once and compiles the plugin meanwhile; a scenario that
# allows a call 500 ms must not meet the compilation, so the suite starts
# once the plugin is ready.
for _ in $(seq 1 1200); do
	grep -q 'msg=ready' "$work/hangar.log" && break
	kill -0 "$pid" 2>/dev/null || fail "hangar exited"
	sleep 0.1
done
grep -q 'msg=ready' "$work/hangar.log" || fail "the plugin was not ready within 2 minutes"

# Does Hangar offer the tasks extension? Asked as a 2026-07-28 client would.
tasks=$("$node" -e '
const [url] = process.argv.slice(1);
const meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}};
fetch(url, {method: "POST", headers: {"content-type": "application/json", accept: "application/json, text/event-stream",
	"mcp-protocol-version": "2026-07-28", "mcp-method": "server/discover"},
	body: JSON.stringify({jsonrpc: "2.0", id: 1, method: "server/discover", params: {_meta: meta}})})
.then(r => r.text()).then(text => {
	// A JSON body, or an SSE stream whose data line is the answer.
	const data = text.trimStart().startsWith("{") ? text : text.split("\n").filter(l => l.startsWith("data:")).map(l => l.slice(5)).pop();
	const b = JSON.parse(data ?? "null") ?? {};
	if (!b.result) throw new Error("server/discover failed: " + JSON.stringify(b));
	console.log(b.result.capabilities?.extensions?.["io.modelcontextprotocol/tasks"] ? "yes" : "no");
}).catch(e => { console.error(e.message); process.exit(1); });' "$url") || fail "server/discover failed"

[ "$tasks" = yes ] || fail "hangar does not offer the tasks extension (io.modelcontextprotocol/tasks) in server/discover, which it does by default"

# run_set runs the suite once with the given flags (a requirement set, or a
# suite), which must pass whole, and prints its tally and time.
run_set() {
	local name=$1
	shift
	local out="$work/$name.txt" status=0 t0
	t0=$(date +%s)
	echo "conformance: $name ($*)"
	"$node" "$suite" server --url "$url" "$@" >"$out" 2>&1 || status=$?
	if [ "$status" != 0 ] || ! grep -Eq '^Total: [0-9]+ passed, 0 failed' "$out" || grep -q '✗' "$out"; then
		cat "$out"
		fail "$name failed"
	fi
	grep -E '^(✓|✗)|^Total:|^Not scored|^  ✓' "$out"
	echo "conformance: $name took $(($(date +%s) - t0)) s"
}

start=$(date +%s)
echo "conformance: @modelcontextprotocol/conformance $version against $url"

# 1. 2025-11-25, at its wire.
run_set 2025-11-25 --requirements 2025-11-25

# 2. 2026-07-28, at its wire; the tasks extension's scenarios among them.
run_set 2026-07-28 --requirements 2026-07-28
grep -q '^✓ tasks-' "$work/2026-07-28.txt" || fail "the requirement set 2026-07-28 ran none of the tasks extension's scenarios (tasks-*): has the suite changed?"

# 3. Every server scenario, each at its default wire.
run_set all --suite all

echo "conformance: passed in $(($(date +%s) - start)) s"
