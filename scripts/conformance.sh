#!/usr/bin/env bash
# Runs the official MCP conformance suite (@modelcontextprotocol/conformance,
# the version test/node pins) against `hangar serve --http` with the
# conformance fixture plugin, both built from source here, with no expected
# failures: every check of every scenario run must pass.
#
#  1. The requirement set of MCP 2025-11-25 (--requirements 2025-11-25),
#     at that revision's wire (initialize and sessions).
#  2. The requirement set of MCP 2026-07-28: the scenarios it scores and
#     those it runs unscored (pending, extensions), each at the 2026-07-28
#     wire (per-request _meta, no sessions): what --requirements 2026-07-28
#     runs, one scenario at a time.
#  3. Every server scenario of the suite (--suite all), each at its default
#     wire, but those of 2026-07-28 alone that ran in 2 (the same run).
#
# The scenarios of the tasks extension (io.modelcontextprotocol/tasks,
# "tasks-*") run only when Hangar offers the extension (server/discover
# lists it under capabilities.extensions): a server that does not offer an
# optional extension cannot pass its scenarios, so they are not run, and
# the script says so. Once Hangar offers it, they run and must pass.
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

# runnable filters a list of scenarios: the tasks extension's only when
# Hangar offers it.
runnable() {
	if [ "$tasks" = yes ]; then cat; else grep -v '^tasks-' || true; fi
}

# one runs one scenario (with the given flags), which must pass whole, and
# adds its checks to the set's tally.
passed=0
failed=0
one() {
	local scenario=$1
	shift
	local out="$work/scenario.txt" status=0 t0
	t0=$(date +%s%N)
	"$node" "$suite" server --url "$url" --scenario "$scenario" "$@" >"$out" 2>&1 || status=$?
	local line
	line=$(grep -E '^Passed: [0-9]+/[0-9]+, [0-9]+ failed' "$out" | tail -n1 || true)
	if [ "$status" != 0 ] || [ -z "$line" ] || ! [[ "$line" =~ ^Passed:\ ([0-9]+)/[0-9]+,\ 0\ failed ]]; then
		cat "$out"
		fail "scenario $scenario $* failed"
	fi
	passed=$((passed + BASH_REMATCH[1]))
	echo "  ✓ $scenario: $line ($((($(date +%s%N) - t0) / 1000000)) ms)"
}

# The scenarios `list` prints for the given flags (server scenarios only).
scenarios() {
	"$node" "$suite" list --server "$@" | sed -n '/^Server scenarios/,/^$/s/^  - \([^ ]*\).*/\1/p'
}

start=$(date +%s)
echo "conformance: @modelcontextprotocol/conformance $version against $url"

# 1. 2025-11-25, as the suite runs a requirement set.
echo "conformance: --requirements 2025-11-25"
status=0
"$node" "$suite" server --url "$url" --requirements 2025-11-25 >"$work/r2025.txt" 2>&1 || status=$?
if [ "$status" != 0 ] || ! grep -Eq '^Total: [0-9]+ passed, 0 failed' "$work/r2025.txt" || grep -q '^  ✗' "$work/r2025.txt"; then
	cat "$work/r2025.txt"
	fail "requirement set 2025-11-25 failed"
fi
grep -E '^(✓|✗)|^Total:' "$work/r2025.txt"
echo "conformance: 2025-11-25 took $(($(date +%s) - start)) s"

# 2. 2026-07-28: the scored scenarios, then the unscored ones its requirement
# file lists for the server (leg: server), at the 2026-07-28 wire.
t=$(date +%s)
echo "conformance: requirement set 2026-07-28, scenario by scenario"
unscored=$(awk '/^not_scored:/ {n = 1} n && /- scenario:/ {s = $3} n && /leg: server/ {print s}' "$pkg/requirements/2026-07-28.yaml")
[ -n "$unscored" ] || fail "no unscored server scenarios found in $pkg/requirements/2026-07-28.yaml: has its format changed?"
list=$({ scenarios --requirements 2026-07-28; echo "$unscored"; } | runnable)
passed=0 failed=0
for s in $list; do
	case $s in
	# The extension's scenarios are "not on the spec timeline": the suite
	# skips them at a spec version unless forced. They run at this wire.
	tasks-*) one "$s" --spec-version 2026-07-28 --force ;;
	*) one "$s" --spec-version 2026-07-28 ;;
	esac
done
echo "Total: $passed passed, $failed failed (2026-07-28, $(echo "$list" | wc -w) scenarios)"
echo "conformance: 2026-07-28 took $(($(date +%s) - t)) s"

ran2026=$list

# 3. Every server scenario, as --suite all runs them, but those of 2026-07-28
# alone that ran above: their default wire is 2026-07-28, the run the same.
t=$(date +%s)
echo "conformance: every server scenario (--suite all), scenario by scenario"
only2026=$("$node" "$suite" list --server | sed -n 's/^  - \([^ ]*\) \[2026-07-28\]$/\1/p')
# The extension's scenarios ran above too, at the same wire.
only2026=$(printf '%s\n%s\n' "$only2026" "$(echo "$ran2026" | tr ' ' '\n' | grep '^tasks-' || true)")
dup=$(comm -12 <(echo "$only2026" | sort -u) <(echo "$ran2026" | tr ' ' '\n' | sort -u))
list=$(scenarios | runnable | { grep -vxF -f <(echo "$dup") || true; })
passed=0 failed=0
for s in $list; do one "$s"; done
echo "Total: $passed passed, $failed failed (all, $(echo "$list" | wc -w) scenarios, and $(echo "$dup" | wc -w) of 2026-07-28 alone that ran above)"
echo "conformance: all took $(($(date +%s) - t)) s"

if [ "$tasks" != yes ]; then
	echo "conformance: not run: the scenarios of the tasks extension, which Hangar does not offer yet: $(scenarios | grep '^tasks-' | tr '\n' ' ')"
fi
echo "conformance: passed in $(($(date +%s) - start)) s"
