# ncclbpf — the two commands of the README are `make demo` and `make test`.
# Both install what they need first (scripts/setup.sh: clang-19, libbpf
# headers, Go modules) and build everything from source.

GO      ?= go
BUILD   ?= build
export CGO_ENABLED := 1

.PHONY: all setup build cli lib demo test test-long clean policies

all: build

setup:
	./scripts/setup.sh

cli:
	$(GO) build -o $(BUILD)/ncclbpf ./cmd/ncclbpf

lib:
	$(GO) build -buildmode=c-shared -o $(BUILD)/libncclbpf.so ./plugin

build: setup cli lib

# Rebuild every committed eBPF object from its C source (needs clang-19): one
# recipe, one set of flags, listed in scripts/bpf-objects.txt and checked by
# internal/bpfbuild's test.
policies: setup
	./scripts/build-bpf.sh

# The main job: the whole path on the embedded default policy.
demo: build
	./scripts/demo.sh

# The default test run: everything CI runs (well under 15 minutes on 2 cores).
test: setup
	$(GO) vet ./...
	$(GO) test -timeout 30m ./...

# Long runs that do not belong in CI: fuzzing, differential fuzzing, hammers.
test-long: setup
	./scripts/test-long.sh

clean:
	rm -rf $(BUILD)
