#!/usr/bin/env bash
# The main job (`make demo`): the whole ncclbpf path, from a policy object to
# decisions inside an NCCL-like process, on the embedded default policy and
# then on the size-aware example. Needs build/ncclbpf and build/libncclbpf.so
# (`make build` makes them); builds the NCCL-like C host itself.
set -euo pipefail
cd "$(dirname "$0")/.."
B=${BUILD:-build}
CLI="$B/ncclbpf"
LIB="$B/libncclbpf.so"
HOST="$B/tuner-host"
for f in "$CLI" "$LIB"; do
	[ -e "$f" ] || { echo "demo: $f is missing: run 'make build' first" >&2; exit 1; }
done
scripts/build.sh host "$HOST"

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
ALGOS=(tree ring collnet_direct collnet_chain nvls nvls_tree pat)
PROTOS=(ll ll128 simple)
COLLS=(broadcast reduce allgather reducescatter allreduce)

# One communicator of 8 ranks on one node, then AllReduce/AllGather calls over
# a range of sizes with a cost table where every cell is available. The shim
# marks the policy's choice by making that cell the cheapest (0.0); a table
# with no 0.0 cell means NCCL keeps its own choice.
host_session() {
	local table
	table=$(awk 'BEGIN{for(a=0;a<7;a++)for(p=0;p<3;p++)printf "%d ", 50+a*7+p*3}')
	{
		echo "init 0 4242 8 1 1 8 8"
		for coll in 4 2; do
			for bytes in 65536 1048576 4194304 67108864 268435456; do
				echo "call 0 $coll $bytes 1 0 $table"
			done
		done
		echo "fin 0"
	} | "$HOST" run "$LIB" 5 | awk -v algos="${ALGOS[*]}" -v protos="${PROTOS[*]}" -v colls="${COLLS[*]}" '
		BEGIN { split(algos, A, " "); split(protos, P, " "); split(colls, C, " "); n = 0;
		        for (coll = 4; coll >= 2; coll -= 2) for (i = 0; i < 5; i++) { cl[n] = C[coll+1]; n++ } 
		        sz[0]="64 KiB"; sz[1]="1 MiB"; sz[2]="4 MiB"; sz[3]="64 MiB"; sz[4]="256 MiB"; k = 0 }
		$1 == "res" {
			choice = "NCCL decides (table untouched)"
			for (i = 3; i <= NF; i++) if ($i == "00000000") {
				c = i - 3; choice = sprintf("policy chose %s/%s", A[int(c/3)+1], P[c%3+1]) }
			ch = ($2 == 0) ? "NCCL default channels" : $2 " channels"
			printf "  %-14s %-8s -> %s, %s\n", cl[k], sz[k%5], choice, ch; k++ }'
}

step "1. Verify: the embedded default policy and the examples pass; an unsafe one is refused"
"$CLI" verify policies/noop.bpf.o
"$CLI" verify policies/size_aware.bpf.o
if "$CLI" verify testhost/gpu/unsafe_null_deref.bpf.o; then
	echo "demo: the unsafe policy was accepted" >&2; exit 1
fi

step "2. Disassemble: eBPF next to its C source (size_aware, first lines)"
# print the first lines from a captured listing: a pipe into head would end
# disasm with SIGPIPE, which pipefail turns into a failed demo
listing=$("$CLI" disasm policies/size_aware.bpf.o)
printf '%s\n' "$listing" | sed -n '1,24p'

step "3. Try a policy offline, no GPU: size_aware for a 4 MiB AllReduce on 8 ranks"
"$CLI" run policies/size_aware.bpf.o --coll allreduce --bytes 4MiB --ranks 8

step "4. Inside an NCCL-like process: libncclbpf.so as tuner v5, embedded default policy (noop)"
env -u NCCLBPF_POLICY bash -c "$(declare -f host_session); $(declare -p ALGOS PROTOS COLLS); HOST=$HOST LIB=$LIB host_session"

step "5. The same process with the embedded size_aware policy (NCCLBPF_POLICY=builtin:size_aware)"
NCCLBPF_POLICY=builtin:size_aware bash -c "$(declare -f host_session); $(declare -p ALGOS PROTOS COLLS); HOST=$HOST LIB=$LIB host_session"

step "6. A policy that fails verification, or a missing file, leaves NCCL's defaults: one line on stderr, one warning in NCCL's log"
for pol in testhost/gpu/unsafe_null_deref.bpf.o /nonexistent/policy.bpf.o; do
	printf 'init 0 4242 8 1 1 8 8\nwarns\nfin 0\n' | HOST_VERBOSE=1 NCCLBPF_POLICY=$pol "$HOST" run "$LIB" 5 2>&1 |
		sed -e 's/^\[nccl log[^]]*\] /  NCCL log: /' -e 's/^ncclbpf: /  stderr:   ncclbpf: /' \
			-e 's/^warns /  warnings logged: /' -e '/^ok$/d'
done

step "7. One semantics, two engines: the bpf_conformance corpus on the interpreter and the JIT"
CORPUS=${NCCLBPF_CONFORMANCE_DIR:-../shared/conformance/bpf_conformance}
if [ -d "$CORPUS" ]; then
	"$CLI" conformance --engine all "$CORPUS"
else
	echo "(skipped: no corpus at $CORPUS; set NCCLBPF_CONFORMANCE_DIR)"
fi
printf '\ndemo: done\n'
