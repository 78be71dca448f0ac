#!/usr/bin/env bash
# Installs what Hangar's tests need beyond Go modules, if it is missing:
# wat2wasm (Debian package wabt) for the hand-written test plugins, nginx
# (Debian package nginx) for the test of replicas behind a load balancer,
# Chromium (Debian package chromium) for the browser test of MCP Apps
# views, and the npm packages of test/node (Node 22, the official MCP
# conformance suite, the MCP TypeScript SDK, the MCP Apps host library,
# esbuild and puppeteer-core). Safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."

# Debian packages: wat2wasm (wabt), nginx and chromium. The tests run
# nginx as an unprivileged process with a configuration of their own;
# RUNLEVEL=1 keeps the package from starting the system's nginx service.
# test/node/apps.test.mjs drives /usr/bin/chromium headless through
# puppeteer-core, which downloads no browser; HANGAR_CHROMIUM names another
# Chromium instead, and then none is installed.
apt_missing=""
command -v wat2wasm >/dev/null 2>&1 || apt_missing="$apt_missing wabt"
command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || apt_missing="$apt_missing nginx"
[ -n "${HANGAR_CHROMIUM:-}" ] || [ -x /usr/bin/chromium ] || apt_missing="$apt_missing chromium"
if [ -n "$apt_missing" ]; then
	echo "deps: installing$apt_missing" >&2
	sudo=""
	[ "$(id -u)" = 0 ] || sudo="sudo"
	$sudo apt-get update -qq
	# shellcheck disable=SC2086 # one word per package
	$sudo env RUNLEVEL=1 DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $apt_missing >/dev/null
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
