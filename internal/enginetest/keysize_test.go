package enginetest

import (
	"bytes"
	"testing"

	"github.com/ncclbpf/ncclbpf/maps"
	"github.com/ncclbpf/ncclbpf/vm"
)

// progUpdateWide: the key is the 16 bytes {ctx.key, ctx.val} at r10-16
// (a map with a smaller key size reads only its first key-size bytes; the
// rest is noise), the value {ctx.val, ctx.flags}; r0 =
// bpf_map_update_elem(map(0), key, value, BPF_ANY).
const progUpdateWide = `
	mov %r6, %r1
	ldxdw %r2, [%r6+0]
	stxdw [%r10-16], %r2
	ldxdw %r2, [%r6+8]
	stxdw [%r10-8], %r2
	stxdw [%r10-32], %r2
	ldxdw %r3, [%r6+16]
	stxdw [%r10-24], %r3
	lddw %r1, map(0)
	mov %r2, %r10
	add %r2, -16
	mov %r3, %r10
	add %r3, -32
	mov %r4, 0
	call 2
	exit
`

// progLookupWide: r0 = value[0] for the key of progUpdateWide, -1 when
// missing.
const progLookupWide = `
	ldxdw %r2, [%r1+0]
	stxdw [%r10-16], %r2
	ldxdw %r2, [%r1+8]
	stxdw [%r10-8], %r2
	lddw %r1, map(0)
	mov %r2, %r10
	add %r2, -16
	call 1
	jeq %r0, 0, miss
	ldxdw %r0, [%r0+0]
	exit
miss:
	mov %r0, -1
	exit
`

// TestHashKeySizes: keys that are not a multiple of 8 bytes are compared
// and hashed on their key-size bytes only, whatever follows them in the
// program's memory.
func TestHashKeySizes(t *testing.T) {
	onEngines(t, func(t *testing.T, e vm.Engine) {
		for _, ks := range []uint32{4, 12, 16} {
			for _, typ := range []maps.Type{maps.Hash, maps.LRUHash} {
				m := newMap(t, maps.Spec{Name: "keys", Type: typ, KeySize: ks, ValueSize: 16, MaxEntries: 8})
				upd, look := program(t, e, progUpdateWide, m), program(t, e, progLookupWide, m)
				// noise changes the bytes after the key (for ks 16, none).
				noise := func(c Ctx, n uint64) Ctx {
					switch ks {
					case 4:
						c.Key ^= n << 32
						c.Val ^= n
					case 12:
						c.Val ^= n << 32
					}
					return c
				}
				k := Ctx{Key: 0x1122334455667788, Val: 0x99aabbccddeeff00, Flags: 7}
				expect(t, "update", run(t, upd, k), 0)
				last := k.Val // value[0] stored by the last update
				for n := uint64(0); n < 3; n++ {
					if ks == 16 && n > 0 {
						break
					}
					c := noise(k, n*0x5a5a5a5a)
					if got := run(t, look, c); got != last {
						t.Errorf("%s key size %d: lookup with bytes after the key changed (%#x): r0 %s, want %#x", typ, ks, n, errName(got), last)
					}
					expect(t, "update of the same key with other bytes after it", run(t, upd, c), 0)
					last = c.Val
				}
				keys, err := m.Keys()
				if err != nil {
					t.Fatal(err)
				}
				want := append(u64(k.Key), u64(k.Val)...)[:ks]
				if len(keys) != 1 || !bytes.Equal(keys[0], want) {
					t.Errorf("%s key size %d: keys %x, want [%x]", typ, ks, keys, want)
				}
				// A key differing in its last byte is another key.
				other := k
				if ks == 4 {
					other.Key ^= 1 << 24
				} else {
					other.Val ^= 1 << (8*(ks-8) - 8)
				}
				if got := run(t, look, other); got != ^uint64(0) {
					t.Errorf("%s key size %d: lookup of a key differing in its last byte: r0 %s, want NULL", typ, ks, errName(got))
				}
			}
		}
	})
}
