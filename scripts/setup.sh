#!/usr/bin/env bash
# scripts/setup.sh [demo|test]: installs what `make demo` (demo) or
# `make test` (test, the default) needs on a fresh Debian 12 (bookworm) or
# Ubuntu machine, then downloads the Go modules.
#
# demo (make build, make demo, make dist):
#   clang-19          compiles eBPF policies (-target bpf)
#   libbpf-dev        <bpf/bpf_helpers.h> and friends
#   linux-libc-dev    <linux/bpf.h> and the multiarch <asm/types.h>
#   gcc, libc6-dev    cgo, the C shim and the C test host
#   make              the Makefile
# test (make test), in addition:
#   llvm-19           llvm-objdump-19, to look at compiled objects
#   qemu-user, gcc-aarch64-linux-gnu, libc6-dev-arm64-cross
#                     the arm64 (Grace hosts) build and its tests, run under
#                     qemu-aarch64 on x86-64 machines
#   prometheus        the exporter's end-to-end test scrapes it with a real
#                     Prometheus server (and promtool checks its output); the
#                     service the package enables is disabled again: the test
#                     runs its own server
#   chromium          the report's test opens it in a headless browser
#   python3-torch     a real PyTorch TCPStore server for the job-store tests
#                     (control/tcpstore_test.go); about 160 MB to download,
#                     2 minutes to install on a 2-core machine
#   etcd-server       a real etcd for the job-store tests
#
# It is idempotent and cheap to re-run: apt is used only when something is
# missing, and `apt-get update` only right before such an install. Go
# itself (go.mod's version) must already be installed: Debian's is too old.
set -euo pipefail
cd "$(dirname "$0")/.."

missing=()
need_file() { # package file...
	local pkg=$1 f
	shift
	for f in "$@"; do
		if [ ! -e "$f" ]; then
			missing+=("$pkg")
			return
		fi
	done
}

profile=${1:-test}
case $profile in demo | test) ;; *)
	echo "setup: unknown profile $profile: want demo or test" >&2
	exit 2
	;;
esac

need_file clang-19 /usr/bin/clang-19
need_file libbpf-dev /usr/include/bpf/bpf_helpers.h /usr/include/bpf/bpf_helper_defs.h
need_file linux-libc-dev /usr/include/linux/bpf.h
# <asm/types.h> is in the multiarch directory (x86_64-linux-gnu, ...).
compgen -G '/usr/include/*-linux-gnu*/asm/types.h' >/dev/null || missing+=(linux-libc-dev)
need_file libc6-dev /usr/include/stdio.h
command -v gcc >/dev/null 2>&1 || missing+=(gcc)
command -v make >/dev/null 2>&1 || missing+=(make)
if [ "$profile" = test ]; then
need_file llvm-19 /usr/bin/llvm-objdump-19
# The arm64 JIT, interpreter and plugin are cross-built and run under
# user-mode emulation in every test run.
if [ "$(uname -m)" != aarch64 ]; then
	command -v qemu-aarch64 >/dev/null 2>&1 || command -v qemu-aarch64-static >/dev/null 2>&1 || missing+=(qemu-user)
	need_file gcc-aarch64-linux-gnu /usr/bin/aarch64-linux-gnu-gcc
	need_file libc6-dev-arm64-cross /usr/aarch64-linux-gnu/include/stdio.h /usr/aarch64-linux-gnu/lib/ld-linux-aarch64.so.1
fi

# Metrics and report: a real Prometheus (promtool comes with it) and a
# headless browser.
command -v prometheus >/dev/null 2>&1 || missing+=(prometheus)
command -v promtool >/dev/null 2>&1 || missing+=(prometheus)
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
fi

# Job stores: PyTorch's TCPStore (Debian's python3-torch, for the system
# python3) and etcd.
/usr/bin/python3 -c 'import torch.distributed' >/dev/null 2>&1 || missing+=(python3-torch)
command -v etcd >/dev/null 2>&1 || missing+=(etcd-server)

if [ ${#missing[@]} -gt 0 ]; then
	echo "setup: installing ${missing[*]}"
	SUDO=()
	if [ "$(id -u)" -ne 0 ]; then
		if ! command -v sudo >/dev/null 2>&1; then
			echo "setup: need root or sudo to install: ${missing[*]}" >&2
			exit 1
		fi
		SUDO=(sudo)
	fi
	export DEBIAN_FRONTEND=noninteractive
	"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q
	if ! "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive \
		apt-get install -y -q --no-install-recommends "${missing[@]}"; then
		echo "setup: apt-get install failed. On bookworm without clang-19 in" >&2
		echo "setup: the configured sources, add https://apt.llvm.org (llvm-toolchain-bookworm-19)." >&2
		exit 1
	fi
	# The prometheus package starts and enables a system service; the tests
	# run their own server on a free port.
	if [[ " ${missing[*]} " == *" prometheus "* ]] && command -v systemctl >/dev/null 2>&1; then
		"${SUDO[@]}" systemctl disable --now prometheus >/dev/null 2>&1 || true
	fi
fi

if ! command -v go >/dev/null 2>&1; then
	echo "setup: Go is not installed; install the version go.mod names from https://go.dev/dl" >&2
	exit 1
fi
want=$(sed -n 's/^go \([0-9.]*\).*/\1/p' go.mod)
have=$(go env GOVERSION | sed 's/^go//')
if [ "$(printf '%s\n%s\n' "$want" "$have" | sort -V | head -n1)" != "$want" ]; then
	# With GOTOOLCHAIN=auto (the default) go fetches the right toolchain
	# itself; say so rather than fail.
	echo "setup: Go $have is older than go.mod's $want; the go command will fetch go$want (GOTOOLCHAIN=auto)" >&2
fi
go mod download
