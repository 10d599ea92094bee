package enginetest

import (
	"fmt"
	"strings"
)

// Test programs in the assembler dialect of package asm. Each gets a Ctx in
// r1 (key at +0, val at +8, flags at +16, out at +24) and uses map(0).

// progLookup: r0 = value[0] of map(0)[ctx.key] and ctx.out = value[1], or
// r0 = -1 when the lookup returns NULL. The key is ctx.key's first
// key-size bytes (little endian: the low 4 bytes for arrays).
const progLookup = `
	mov %r6, %r1
	ldxdw %r2, [%r6+0]
	stxdw [%r10-8], %r2
	lddw %r1, map(0)
	mov %r2, %r10
	add %r2, -8
	call 1                  # bpf_map_lookup_elem
	jeq %r0, 0, miss
	ldxdw %r1, [%r0+8]
	stxdw [%r6+24], %r1
	ldxdw %r0, [%r0+0]
	exit
miss:
	mov %r0, -1
	exit
`

// progUpdate: r0 = bpf_map_update_elem(map(0), &ctx.key, &{ctx.val,
// ctx.key}, ctx.flags).
const progUpdate = `
	mov %r6, %r1
	ldxdw %r2, [%r6+0]
	stxdw [%r10-8], %r2
	ldxdw %r3, [%r6+8]
	stxdw [%r10-24], %r3
	stxdw [%r10-16], %r2
	ldxdw %r4, [%r6+16]
	lddw %r1, map(0)
	mov %r2, %r10
	add %r2, -8
	mov %r3, %r10
	add %r3, -24
	call 2                  # bpf_map_update_elem
	exit
`

// progDelete: r0 = bpf_map_delete_elem(map(0), &ctx.key).
const progDelete = `
	ldxdw %r2, [%r1+0]
	stxdw [%r10-8], %r2
	lddw %r1, map(0)
	mov %r2, %r10
	add %r2, -8
	call 3                  # bpf_map_delete_elem
	exit
`

// progWrite: looks up ctx.key and, through the returned pointer, stores
// ctx.val into value[0] and atomically adds 1 to value[1]; r0 = 0, or -1
// when the key is missing.
const progWrite = `
	mov %r6, %r1
	ldxdw %r2, [%r6+0]
	stxdw [%r10-8], %r2
	lddw %r1, map(0)
	mov %r2, %r10
	add %r2, -8
	call 1
	jeq %r0, 0, miss
	ldxdw %r1, [%r6+8]
	stxdw [%r0+0], %r1
	mov %r1, 1
	lock add [%r0+8], %r1
	mov %r0, 0
	exit
miss:
	mov %r0, -1
	exit
`

// progPerCPU: ctx.out = bpf_get_smp_processor_id(); then atomically adds
// ctx.val to value[0] of map(0)[ctx.key] and returns the new value[0]
// (-1 when the key is out of range).
const progPerCPU = `
	mov %r6, %r1
	call 8                  # bpf_get_smp_processor_id
	stxdw [%r6+24], %r0
	ldxdw %r2, [%r6+0]
	stxdw [%r10-8], %r2
	lddw %r1, map(0)
	mov %r2, %r10
	add %r2, -8
	call 1
	jeq %r0, 0, miss
	ldxdw %r1, [%r6+8]
	lock add [%r0+0], %r1
	ldxdw %r0, [%r0+0]
	exit
miss:
	mov %r0, -1
	exit
`

// progRingOutput: r0 = bpf_ringbuf_output(map(0), &{ctx.key, ctx.val},
// 16, ctx.flags).
const progRingOutput = `
	ldxdw %r2, [%r1+0]
	stxdw [%r10-16], %r2
	ldxdw %r2, [%r1+8]
	stxdw [%r10-8], %r2
	ldxdw %r4, [%r1+16]
	lddw %r1, map(0)
	mov %r2, %r10
	add %r2, -16
	mov %r3, 16
	call 130                # bpf_ringbuf_output
	exit
`

// progRingReserve: p = bpf_ringbuf_reserve(map(0), 16, ctx.flags); r0 =
// -1 when p is NULL; else p = {ctx.key, ctx.val}, then
// bpf_ringbuf_discard(p, 0) when ctx.out == 1, else
// bpf_ringbuf_submit(p, 0); r0 = 0.
const progRingReserve = `
	mov %r6, %r1
	ldxdw %r3, [%r6+16]
	lddw %r1, map(0)
	mov %r2, 16
	call 131                # bpf_ringbuf_reserve
	jeq %r0, 0, null
	ldxdw %r1, [%r6+0]
	stxdw [%r0+0], %r1
	ldxdw %r1, [%r6+8]
	stxdw [%r0+8], %r1
	mov %r1, %r0
	mov %r2, 0
	ldxdw %r3, [%r6+24]
	jeq %r3, 1, discard
	call 132                # bpf_ringbuf_submit
	mov %r0, 0
	exit
discard:
	call 133                # bpf_ringbuf_discard
	mov %r0, 0
	exit
null:
	mov %r0, -1
	exit
`

// progRingBig: r0 = -1 when bpf_ringbuf_reserve(map(0), 8192, 0) returns
// NULL (the ring has 4096 bytes), else submits and returns 0.
const progRingBig = `
	lddw %r1, map(0)
	mov %r2, 8192
	mov %r3, 0
	call 131
	jeq %r0, 0, null
	mov %r1, %r0
	mov %r2, 0
	call 132
	mov %r0, 0
	exit
null:
	mov %r0, -1
	exit
`

// progKtime: t1 = bpf_ktime_get_ns(); t2 = bpf_ktime_get_ns(); ctx.out =
// t2; r0 = t1.
const progKtime = `
	mov %r6, %r1
	call 5                  # bpf_ktime_get_ns
	mov %r7, %r0
	call 5
	stxdw [%r6+24], %r0
	mov %r0, %r7
	exit
`

// progPrandom: r0 = bpf_get_prandom_u32().
const progPrandom = `
	call 7                  # bpf_get_prandom_u32
	exit
`

// printkProg returns a program that calls bpf_trace_printk(format,
// len(format)+1, ctx.key, ctx.val, ctx.flags) with the format (NUL-ended)
// built on the stack, and returns its result.
func printkProg(format string) string {
	b := []byte(format + "\x00")
	for len(b)%8 != 0 {
		b = append(b, 0)
	}
	var sb strings.Builder
	sb.WriteString("\tmov %r6, %r1\n")
	base := -len(b)
	for i := 0; i < len(b); i += 8 {
		var w uint64
		for j := 0; j < 8; j++ {
			w |= uint64(b[i+j]) << (8 * j)
		}
		fmt.Fprintf(&sb, "\tlddw %%r1, %#x\n\tstxdw [%%r10%+d], %%r1\n", w, base+i)
	}
	fmt.Fprintf(&sb, "\tmov %%r1, %%r10\n\tadd %%r1, %d\n\tmov %%r2, %d\n", base, len(format)+1)
	sb.WriteString("\tldxdw %r3, [%r6+0]\n\tldxdw %r4, [%r6+8]\n\tldxdw %r5, [%r6+16]\n")
	sb.WriteString("\tcall 6                  # bpf_trace_printk\n\texit\n")
	return sb.String()
}

// progAtomics uses three maps: map(0) an array (key 4, value 16), map(1)
// a hash (key 8, value 16) holding key 0, map(2) a per-CPU array (key 4,
// value 16). It atomically adds 1 to array[0].value[0] with fetch and
// stores the old value in ctx.out and r0; adds 1 to hash[0].value[0] and
// ctx.val to hash[0].value[1]; adds 1 to percpu[0].value[0]. r0 = -1 when
// a lookup fails.
const progAtomics = `
	mov %r6, %r1
	mov %r1, 0
	stxdw [%r10-8], %r1
	lddw %r1, map(0)
	mov %r2, %r10
	add %r2, -8
	call 1
	jeq %r0, 0, fail
	mov %r1, 1
	lock fetch add [%r0+0], %r1
	stxdw [%r6+24], %r1
	mov %r7, %r1
	lddw %r1, map(1)
	mov %r2, %r10
	add %r2, -8
	call 1
	jeq %r0, 0, fail
	mov %r1, 1
	lock add [%r0+0], %r1
	ldxdw %r1, [%r6+8]
	lock add [%r0+8], %r1
	lddw %r1, map(2)
	mov %r2, %r10
	add %r2, -8
	call 1
	jeq %r0, 0, fail
	mov %r1, 1
	lock add [%r0+0], %r1
	mov %r0, %r7
	exit
fail:
	mov %r0, -1
	exit
`
