# ncclbpf — the two commands of the README are `make demo` and `make test`.
# Each installs what it needs first (scripts/setup.sh: `make demo` clang-19,
# the libbpf and kernel headers, gcc; `make test` also the arm64 cross
# compiler and qemu-user, llvm-19, prometheus and chromium) and builds
# everything from source.

GO      ?= go
BUILD   ?= build
PREFIX  ?= /usr/local
export CGO_ENABLED := 1

# What --version says, stamped at link time (so that it holds under
# GOFLAGS=-buildvcs=false and in make dist too): VERSION defaults to
# `git describe`, REVISION to the commit (+modified for a changed tree).
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo unknown)
REVISION ?= $(shell r=$$(git rev-parse --short=12 HEAD 2>/dev/null) && { git diff --quiet HEAD 2>/dev/null || r=$$r+modified; echo $$r; })
# libncclbpf.so, the CLI and the C test hosts are built by one recipe,
# scripts/build.sh, which holds every flag (internal/buildrecipe's test
# checks that nothing else builds them).
RECIPE   = GO=$(GO) VERSION=$(VERSION) REVISION=$(REVISION) ./scripts/build.sh

.PHONY: all setup setup-demo setup-test build cli lib install demo test test-long clean policies arm64 dist

all: build

setup: setup-test

setup-demo:
	./scripts/setup.sh demo

setup-test:
	./scripts/setup.sh test

cli:
	$(RECIPE) cli $(BUILD)/ncclbpf

lib:
	$(RECIPE) lib $(BUILD)/libncclbpf.so

# The CLI into $(PREFIX)/bin and libncclbpf.so into $(PREFIX)/lib, built
# from this checkout (the module is not published: go install ...@latest
# cannot fetch it).
install: cli lib
	install -D -m 755 $(BUILD)/ncclbpf $(DESTDIR)$(PREFIX)/bin/ncclbpf
	install -D -m 755 $(BUILD)/libncclbpf.so $(DESTDIR)$(PREFIX)/lib/libncclbpf.so

build: setup-demo cli lib

# The CLI and libncclbpf.so for linux/arm64 (Grace hosts), with the
# distribution's cross compiler (scripts/setup.sh installs it).
ARM64_CC ?= aarch64-linux-gnu-gcc
arm64: setup-test
	GOOS=linux GOARCH=arm64 CC=$(ARM64_CC) $(RECIPE) cli $(BUILD)/arm64/ncclbpf
	GOOS=linux GOARCH=arm64 CC=$(ARM64_CC) $(RECIPE) lib $(BUILD)/arm64/libncclbpf.so

# Rebuild every committed eBPF object from its C source (needs clang-19): one
# recipe, one set of flags, listed in scripts/bpf-objects.txt and checked by
# internal/bpfbuild's test.
policies: setup-demo
	./scripts/build-bpf.sh

# The main job: the whole path on the embedded default policy.
demo: build
	./scripts/demo.sh

# The default test run: everything CI runs (well under 15 minutes on 2 cores).
# Without the bpf_conformance corpus (outside the repository) its tests skip,
# one line each after the run; .ci/run requires it.
test: setup-test
	$(GO) vet ./...
	$(GO) test -timeout 30m ./...
	@GO=$(GO) ./scripts/corpus-skips.sh

# Long runs that do not belong in CI: fuzzing, differential fuzzing, hammers.
test-long: setup-test
	./scripts/test-long.sh

# A versioned release tarball (CLI, libncclbpf.so, headers, example policies,
# SHA256SUMS) under $(BUILD)/dist; VERSION=... overrides `git describe`.
dist: setup-demo
	BUILD=$(BUILD) GO=$(GO) VERSION=$(VERSION) REVISION=$(REVISION) ./scripts/dist.sh

clean:
	rm -rf $(BUILD)
