# The two commands of the README.
#   make run   builds the example plugin and serves it on http://127.0.0.1:8080/mcp
#   make test  installs test dependencies and runs every test

GO ?= go
WASM := GOOS=wasip1 GOARCH=wasm $(GO) build -buildmode=c-shared -trimpath

.PHONY: run test examples clean

run: examples/hello/hello.wasm
	$(GO) run ./cmd/hangar serve --http 127.0.0.1:8080 examples/hello/hello.wasm

test:
	scripts/test.sh

# Every example plugin, built from source.
EXAMPLES := $(notdir $(patsubst %/,%,$(wildcard examples/*/)))
examples: $(foreach e,$(EXAMPLES),examples/$(e)/$(e).wasm)

examples/%.wasm: FORCE
	$(WASM) -o $@ ./$(@D)

clean:
	rm -f examples/*/*.wasm

FORCE:
