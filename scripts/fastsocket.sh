#!/usr/bin/env bash
# fastsocket.sh: Google's nccl-fastsocket, a real third-party NCCL net plugin (its newest table is net
# ABI v6), built from its public source for the net wrapper's checks on a GPU machine
# (testhost/gpu/net-check.sh). None of its code, nor NCCL's, is part of this repository.
#
#   scripts/fastsocket.sh prepare FASTSOCKET_REPO NCCL_REPO DIR
#       Copies the sources into DIR (for carrying to a machine without network access):
#       DIR/src from a checkout or bare clone of github.com/google/nccl-fastsocket (HEAD), and
#       DIR/nccl from NVIDIA/nccl's plugins/net/example/nccl (the self-contained public headers of
#       the net plugin ABI, NCCL's own example plugin's; HEAD).
#   scripts/fastsocket.sh build DIR OUT
#       Builds OUT/libnccl-net-fastsocket.so from DIR with g++ alone (fastsocket's own build is bazel
#       against NCCL 2.13's source tree): the only file written here is a small nccl_net.h that
#       includes NCCL's headers for the tables fastsocket implements (v4..v6; its compat.h declares
#       v2 and v3 for NCCL 2.13) and defines NCCL_MAJOR/NCCL_MINOR as 2.13.
#       libstdc++ and libgcc are linked statically: the plugin runs where the compiler's are older.
set -euo pipefail
usage() {
	sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
	exit 2
}
[ $# -ge 1 ] || usage
case $1 in
prepare)
	[ $# -eq 4 ] || usage
	fs=$2 nccl=$3 dir=$4
	for r in "$fs" "$nccl"; do
		git -C "$r" rev-parse --verify -q HEAD >/dev/null || { echo "fastsocket.sh: $r is not a git repository" >&2; exit 2; }
	done
	rm -rf "$dir" && mkdir -p "$dir/src" "$dir/nccl"
	git -C "$fs" archive HEAD | tar -x -C "$dir/src"
	git -C "$nccl" archive HEAD plugins/net/example/nccl | tar -x -C "$dir/nccl" --strip-components=4
	for f in src/net_fastsocket.cc src/utilities.cc src/compat.h nccl/net_v6.h nccl/err.h; do
		[ -f "$dir/$f" ] || { echo "fastsocket.sh: $dir/$f missing after the copy (layout changed upstream?)" >&2; exit 1; }
	done
	echo "fastsocket.sh: sources in $dir (fastsocket $(git -C "$fs" rev-parse --short HEAD), NCCL headers $(git -C "$nccl" rev-parse --short HEAD))"
	;;
build)
	[ $# -eq 3 ] || usage
	dir=$2 out=$3
	command -v g++ >/dev/null || { echo "fastsocket.sh: g++ is not installed" >&2; exit 2; }
	for f in src/net_fastsocket.cc src/utilities.cc nccl/net_v6.h; do
		[ -f "$dir/$f" ] || { echo "fastsocket.sh: $dir/$f missing (scripts/fastsocket.sh prepare)" >&2; exit 2; }
	done
	mkdir -p "$out/include"
	cat >"$out/include/nccl_net.h" <<'H'
/* nccl_net.h as nccl-fastsocket expects it (NCCL 2.13): NCCL's public net plugin headers. */
#ifndef NCCLBPF_FASTSOCKET_NCCL_NET_H
#define NCCLBPF_FASTSOCKET_NCCL_NET_H
#define NCCL_MAJOR 2
#define NCCL_MINOR 13
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "err.h"
#include "common.h"
#include "types.h"
#include "net_device.h"
#define NCCL_NET_HANDLE_MAXSIZE 128
#define NCCL_PTR_HOST 0x1
#define NCCL_PTR_CUDA 0x2
#define NCCL_PTR_DMABUF 0x4
#define NCCL_NET_MAX_REQUESTS 8
#include "net_v6.h"
#include "net_v5.h"
#include "net_v4.h"
#endif
H
	g++ -O2 -std=c++17 -shared -fPIC -I"$out/include" -I"$dir/nccl" -o "$out/libnccl-net-fastsocket.so" \
		"$dir/src/net_fastsocket.cc" "$dir/src/utilities.cc" -static-libstdc++ -static-libgcc -lpthread
	nm -D --defined-only "$out/libnccl-net-fastsocket.so" | grep -q ' ncclNetPlugin_v6$' ||
		{ echo "fastsocket.sh: the build exports no ncclNetPlugin_v6" >&2; exit 1; }
	echo "fastsocket.sh: built $out/libnccl-net-fastsocket.so (exports $(nm -D --defined-only "$out/libnccl-net-fastsocket.so" | grep -o 'ncclNetPlugin_v[0-9]*' | sort -V | tr '\n' ' '))"
	;;
*) usage ;;
esac
