#!/usr/bin/env bash
# Installs what Hangar's tests need beyond Go modules, if it is missing:
# wat2wasm (Debian package wabt) for the hand-written test plugins, and the
# npm packages of test/node (Node 22, the official MCP conformance
# suite and the MCP TypeScript SDK). Safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v wat2wasm >/dev/null 2>&1; then
	echo "deps: installing wabt (wat2wasm)" >&2
	sudo=""
	[ "$(id -u)" = 0 ] || sudo="sudo"
	$sudo apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq wabt >/dev/null
fi

if ! command -v npm >/dev/null 2>&1; then
	echo "deps: npm is required (apt-get install npm, or install Node.js)" >&2
	exit 1
fi
stamp=test/node/node_modules/.installed
if [ ! -f "$stamp" ] || [ test/node/package-lock.json -nt "$stamp" ]; then
	echo "deps: installing npm packages in test/node" >&2
	(cd test/node && npm ci --no-audit --no-fund --loglevel=error)
	touch "$stamp"
fi

# The benchmark's Node peer (bench/node), which its smoke test drives too.
stamp=bench/node/node_modules/.installed
if [ ! -f "$stamp" ] || [ bench/node/package-lock.json -nt "$stamp" ]; then
	echo "deps: installing npm packages in bench/node" >&2
	(cd bench/node && npm ci --no-audit --no-fund --loglevel=error)
	touch "$stamp"
fi

# The OCI tests run a real registry (distribution), built from the module
# proxy into test/bin; scripts/test.sh points the tests at it.
if [ ! -x test/bin/registry ]; then
	echo "deps: building the test OCI registry" >&2
	GOBIN="$PWD/test/bin" go install -ldflags='-s -w' github.com/distribution/distribution/v3/cmd/registry@v3.1.2
fi
