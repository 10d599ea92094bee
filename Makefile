# ncclbpf — the two commands of the README are `make demo` and `make test`.
# Both install what they need first (scripts/setup.sh: clang-19, libbpf
# headers, Go modules) and build everything from source.

GO      ?= go
BUILD   ?= build
export CGO_ENABLED := 1

.PHONY: all setup build cli lib demo test test-long clean policies arm64 dist

all: build

setup:
	./scripts/setup.sh

cli:
	$(GO) build -o $(BUILD)/ncclbpf ./cmd/ncclbpf

lib:
	$(GO) build -buildmode=c-shared -o $(BUILD)/libncclbpf.so ./plugin

build: setup cli lib

# The CLI and libncclbpf.so for linux/arm64 (Grace hosts), with the
# distribution's cross compiler (scripts/setup.sh installs it).
ARM64_CC ?= aarch64-linux-gnu-gcc
arm64: setup
	GOOS=linux GOARCH=arm64 CC=$(ARM64_CC) $(GO) build -o $(BUILD)/arm64/ncclbpf ./cmd/ncclbpf
	GOOS=linux GOARCH=arm64 CC=$(ARM64_CC) $(GO) build -buildmode=c-shared -o $(BUILD)/arm64/libncclbpf.so ./plugin

# Rebuild every committed eBPF object from its C source (needs clang-19): one
# recipe, one set of flags, listed in scripts/bpf-objects.txt and checked by
# internal/bpfbuild's test.
policies: setup
	./scripts/build-bpf.sh

# The main job: the whole path on the embedded default policy.
demo: build
	./scripts/demo.sh

# The default test run: everything CI runs (well under 15 minutes on 2 cores).
# Without the bpf_conformance corpus (outside the repository) its tests skip,
# one line each after the run; .ci/run requires it.
test: setup
	$(GO) vet ./...
	$(GO) test -timeout 30m ./...
	@GO=$(GO) ./scripts/corpus-skips.sh

# Long runs that do not belong in CI: fuzzing, differential fuzzing, hammers.
test-long: setup
	./scripts/test-long.sh

# A versioned release tarball (CLI, libncclbpf.so, headers, example policies,
# SHA256SUMS) under $(BUILD)/dist; VERSION=... overrides `git describe`.
dist: setup
	BUILD=$(BUILD) GO=$(GO) ./scripts/dist.sh

clean:
	rm -rf $(BUILD)
