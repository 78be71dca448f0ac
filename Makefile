# The two commands of the README.
#   make run   builds the example plugins and serves examples/hangar.yaml on http://127.0.0.1:8080/mcp
#   make test  installs test dependencies and runs every test
# and
#   make attack  runs the attack suite against the hangar binary (test/attack;
#                make test runs it too). ATTACK_FLAGS passes flags to it, for
#                example ATTACK_FLAGS='-report docs/security.md'.

GO ?= go
WASM := GOOS=wasip1 GOARCH=wasm $(GO) build -buildmode=c-shared -trimpath

.PHONY: run test attack examples clean

run: examples/hello/hello.wasm examples/notes/notes.wasm
	$(GO) run ./cmd/hangar serve --config examples/hangar.yaml --http 127.0.0.1:8080

test:
	scripts/test.sh

attack:
	$(GO) run ./test/attack $(ATTACK_FLAGS)

# Every example plugin, built from source.
EXAMPLES := $(notdir $(patsubst %/,%,$(wildcard examples/*/)))
examples: $(foreach e,$(EXAMPLES),examples/$(e)/$(e).wasm)

examples/%.wasm: FORCE
	$(WASM) -o $@ ./$(@D)

clean:
	rm -f examples/*/*.wasm

FORCE:
