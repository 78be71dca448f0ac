# The two commands of the README.
#   make run   builds the example plugins and ./hangar, and serves examples/hangar.yaml on
#              http://127.0.0.1:8080/mcp (RUN_ADDR sets another address; HANGAR_BIN where the
#              binary goes) until Ctrl-C, which ends it with status 0 once it stopped cleanly
#   make test  installs test dependencies and runs every test
# and
#   make attack  runs the attack suite against the hangar binary (test/attack;
#                make test runs it too). ATTACK_FLAGS passes flags to it, for
#                example ATTACK_FLAGS='-report docs/security.md'.

GO ?= go
WASM := GOOS=wasip1 GOARCH=wasm $(GO) build -buildmode=c-shared -trimpath

.PHONY: run test attack examples clean

RUN_ADDR ?= 127.0.0.1:8080
HANGAR_BIN ?= ./hangar

# hangar is built, then run: under go run, Ctrl-C would end go run with
# status 1 whatever hangar's own status, and make would report an error.
run: examples/hello/hello.wasm examples/notes/notes.wasm
	@echo "make run: building $(HANGAR_BIN); the first build compiles every dependency and takes a few minutes"
	$(GO) build -o $(HANGAR_BIN) ./cmd/hangar
	@echo "make run: serving examples/hangar.yaml at http://$(RUN_ADDR)/mcp; Ctrl-C stops it"
	$(HANGAR_BIN) serve --config examples/hangar.yaml --http $(RUN_ADDR)

test:
	scripts/test.sh

attack:
	$(GO) run ./test/attack $(ATTACK_FLAGS)

# Every example plugin, built from source.
EXAMPLES := $(notdir $(patsubst %/,%,$(wildcard examples/*/)))
examples: $(foreach e,$(EXAMPLES),examples/$(e)/$(e).wasm)

examples/%.wasm: FORCE
	@echo "make: building the example plugin $@ (GOOS=wasip1; the first build compiles Go's runtime for WebAssembly and takes a minute)"
	$(WASM) -o $@ ./$(@D)

clean:
	rm -f examples/*/*.wasm

FORCE:
