package vm

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"
	"unsafe"

	"github.com/ncclbpf/ncclbpf/asm"
	"github.com/ncclbpf/ncclbpf/helpers"
	"github.com/ncclbpf/ncclbpf/hook"
	"github.com/ncclbpf/ncclbpf/vm/internal/testhelpers"
)

var (
	B, H, W, DW = asm.SizeB, asm.SizeH, asm.SizeW, asm.SizeDW
)

func memOf(b ...byte) []byte { return append([]byte(nil), b...) }

func TestLoadStore(t *testing.T) {
	m8 := func() []byte { return memOf(0x81, 0x82, 0x83, 0x84, 0x85, 0x86, 0x87, 0x88) }
	cases := []runCase{
		{name: "ldxb", insns: prog(ldx(B, r0, r1, 1), exit()), mem: m8(), want: 0x82},
		{name: "ldxh", insns: prog(ldx(H, r0, r1, 1), exit()), mem: m8(), want: 0x8382},
		{name: "ldxw unaligned", insns: prog(ldx(W, r0, r1, 3), exit()), mem: m8(), want: 0x87868584},
		{name: "ldxdw", insns: prog(ldx(DW, r0, r1, 0), exit()), mem: m8(), want: 0x8887868584838281},
		{name: "ldxsb", insns: prog(ldxsx(B, r0, r1, 0), exit()), mem: m8(), want: 0xffffffffffffff81},
		{name: "ldxsh", insns: prog(ldxsx(H, r0, r1, 0), exit()), mem: m8(), want: 0xffffffffffff8281},
		{name: "ldxsw", insns: prog(ldxsx(W, r0, r1, 0), exit()), mem: m8(), want: 0xffffffff84838281},
		{name: "ldxsb positive", insns: prog(ldxsx(B, r0, r1, 0), exit()), mem: memOf(0x7f), want: 0x7f},
		{name: "ldx same register", insns: prog(ldx(H, r1, r1, 0), movr(r0, r1), exit()), mem: m8(), want: 0x8281},
		{name: "r2 is len(mem)", insns: prog(movr(r0, r2), exit()), mem: m8(), want: 8},
		{name: "negative offset", insns: prog(a64k(asm.ALUAdd, r1, 8), ldx(B, r0, r1, -1), exit()), mem: m8(), want: 0x88},
		// Stores, read back.
		{name: "stb", insns: prog(st(B, r1, 2, 0x1ff), ldx(DW, r0, r1, 0), exit()), mem: make([]byte, 8), want: 0xff0000},
		{name: "sth", insns: prog(st(H, r1, 2, 0x12345), ldx(DW, r0, r1, 0), exit()), mem: make([]byte, 8), want: 0x23450000},
		{name: "stw", insns: prog(st(W, r1, 4, -1), ldx(DW, r0, r1, 0), exit()), mem: make([]byte, 8), want: 0xffffffff00000000},
		{name: "stdw imm sign-extends", insns: prog(st(DW, r1, 0, -2), ldx(DW, r0, r1, 0), exit()), mem: make([]byte, 8), want: 0xfffffffffffffffe},
		{name: "stxb", insns: prog(ld64(r2, 0x1122334455667788), stx(B, r1, r2, 0), ldx(DW, r0, r1, 0), exit()), mem: make([]byte, 8), want: 0x88},
		{name: "stxh", insns: prog(ld64(r2, 0x1122334455667788), stx(H, r1, r2, 0), ldx(DW, r0, r1, 0), exit()), mem: make([]byte, 8), want: 0x7788},
		{name: "stxw", insns: prog(ld64(r2, 0x1122334455667788), stx(W, r1, r2, 0), ldx(DW, r0, r1, 0), exit()), mem: make([]byte, 8), want: 0x55667788},
		{name: "stxdw", insns: prog(ld64(r2, 0x1122334455667788), stx(DW, r1, r2, 0), ldx(DW, r0, r1, 0), exit()), mem: make([]byte, 8), want: 0x1122334455667788},
		// The stack: 512 bytes below r10, zeroed at entry.
		{name: "stack round trip", insns: prog(st(DW, r10, -8, 42), ldx(DW, r0, r10, -8), exit()), want: 42},
		{name: "stack bottom", insns: prog(st(B, r10, -512, 7), ldx(B, r0, r10, -512), exit()), want: 7},
		{name: "stack is zeroed", insns: prog(ldx(DW, r0, r10, -256), exit()), want: 0},
		{name: "stack via copy of r10", insns: prog(movr(r2, r10), st(W, r2, -4, 9), ldx(W, r0, r10, -4), exit()), want: 9},
		// Traps.
		{name: "below the stack", insns: prog(ldx(B, r0, r10, -513), exit()), err: ErrMemory},
		{name: "at r10", insns: prog(st(B, r10, 0, 1), mov(r0, 0), exit()), err: ErrMemory},
		{name: "across the stack top", insns: prog(ldx(DW, r0, r10, -4), exit()), err: ErrMemory},
		{name: "past mem", insns: prog(ldx(B, r0, r1, 8), exit()), mem: m8(), err: ErrMemory},
		{name: "partly past mem", insns: prog(ldx(DW, r0, r1, 4), exit()), mem: m8(), err: ErrMemory},
		{name: "before mem", insns: prog(ldx(B, r0, r1, -1), exit()), mem: m8(), err: ErrMemory},
		{name: "store past mem", insns: prog(st(W, r1, 6, 0), mov(r0, 0), exit()), mem: m8(), err: ErrMemory},
		{name: "no mem: r1 is 0", insns: prog(ldx(B, r0, r1, 0), exit()), err: ErrMemory},
		{name: "null", insns: prog(mov(r1, 0), ldx(DW, r0, r1, 0), exit()), err: ErrMemory},
		{name: "address wraps around", insns: prog(mov(r1, -1), ldx(DW, r0, r1, 0), exit()), err: ErrMemory},
		{name: "wild pointer", insns: prog(ld64(r1, 0x7f0000001000), ldx(DW, r0, r1, 0), exit()), err: ErrMemory},
	}
	runTable(t, cases, Program{})
}

func TestStoreLeavesNeighbours(t *testing.T) {
	mem := memOf(1, 2, 3, 4, 5, 6, 7, 8)
	x := compile(t, Program{Insns: prog(st(H, r1, 3, 0x0a0b), mov(r0, 0), exit())})
	if _, err := x.Run(mem); err != nil {
		t.Fatal(err)
	}
	if want := memOf(1, 2, 3, 0x0b, 0x0a, 6, 7, 8); !bytes.Equal(mem, want) {
		t.Fatalf("mem = % x, want % x", mem, want)
	}
}

func TestMemLayout(t *testing.T) {
	layout := WithMemLayout(
		MemRange{Offset: 0, Size: 8, Readable: true},                 // read-only input
		MemRange{Offset: 8, Size: 4, Readable: true, Writable: true}, // output
		MemRange{Offset: 16, Size: 8, Writable: true},                // write-only
	)
	cases := []runCase{
		{name: "read input", insns: prog(ldx(DW, r0, r1, 0), exit()), mem: make([]byte, 24), want: 0},
		{name: "write input", insns: prog(st(B, r1, 0, 1), exit()), mem: make([]byte, 24), err: ErrReadOnly},
		{name: "write output", insns: prog(st(W, r1, 8, 5), ldx(W, r0, r1, 8), exit()), mem: make([]byte, 24), want: 5},
		{name: "hole", insns: prog(ldx(B, r0, r1, 12), exit()), mem: make([]byte, 24), err: ErrMemory},
		{name: "across fields", insns: prog(ldx(DW, r0, r1, 4), exit()), mem: make([]byte, 24), err: ErrMemory},
		{name: "read write-only", insns: prog(ldx(B, r0, r1, 16), exit()), mem: make([]byte, 24), err: ErrMemory},
		{name: "write write-only", insns: prog(st(B, r1, 16, 1), mov(r0, 0), exit()), mem: make([]byte, 24), want: 0},
		{name: "stack unaffected", insns: prog(st(B, r10, -1, 3), ldx(B, r0, r10, -1), exit()), mem: make([]byte, 24), want: 3},
	}
	runTable(t, cases, Program{}, layout)
}

func TestContextLayout(t *testing.T) {
	c := &hook.Context{Name: "ctx", Size: 32, Fields: []hook.Field{
		{Name: "in", Offset: 0, Size: 8, Access: hook.Read},
		{Name: "costs", Offset: 8, Size: 4, Access: hook.Read, Array: 3},
		{Name: "out", Offset: 24, Size: 4, Access: hook.Read | hook.Write},
		{Name: "wo", Offset: 28, Size: 4, Access: hook.Write},
	}}
	layout := WithMemLayout(ContextLayout(c)...)
	mem := func() []byte { return make([]byte, 32) }
	cases := []runCase{
		{name: "read field", insns: prog(ldx(DW, r0, r1, 0), exit()), mem: mem(), want: 0},
		{name: "read part of field", insns: prog(ldx(B, r0, r1, 3), exit()), mem: mem(), want: 0},
		{name: "read array element", insns: prog(ldx(W, r0, r1, 16), exit()), mem: mem(), want: 0},
		{name: "read across elements", insns: prog(ldx(DW, r0, r1, 12), exit()), mem: mem(), err: ErrMemory},
		{name: "write read-only field", insns: prog(st(W, r1, 8, 1), exit()), mem: mem(), err: ErrReadOnly},
		{name: "write output", insns: prog(st(W, r1, 24, 2), ldx(W, r0, r1, 24), exit()), mem: mem(), want: 2},
		{name: "read write-only", insns: prog(ldx(W, r0, r1, 28), exit()), mem: mem(), err: ErrMemory},
		{name: "write write-only", insns: prog(st(W, r1, 28, 2), mov(r0, 1), exit()), mem: mem(), want: 1},
		{name: "past the context", insns: prog(ldx(B, r0, r1, 32), exit()), mem: mem(), err: ErrMemory},
	}
	runTable(t, cases, Program{}, layout)
	if _, err := NewInterpreter(WithMemLayout(MemRange{Offset: 0, Size: 8}, MemRange{Offset: 4, Size: 8})).Compile(&Program{Insns: prog(exit())}); !errors.Is(err, ErrInvalidProgram) {
		t.Fatalf("overlapping ranges: %v", err)
	}
}

// TestContextLayoutAgreesWithFieldAt: for every registered hook, every
// access the layout allows is one hook.Context.FieldAt accepts with the
// same rights, and the other way round.
func TestContextLayoutAgreesWithFieldAt(t *testing.T) {
	hooks := hook.All()
	if len(hooks) == 0 {
		t.Skip("no hooks registered")
	}
	for _, h := range hooks {
		c := &h.Context
		x, err := NewInterpreter(WithMemLayout(ContextLayout(c)...)).Compile(&Program{Insns: prog(exit())})
		if err != nil {
			t.Fatalf("hook %s: %v", h.Name, err)
		}
		ix := x.(*interpExec)
		for off := 0; off < c.Size+8; off++ {
			for _, size := range []int{1, 2, 4, 8} {
				for _, write := range []bool{false, true} {
					f, _ := c.FieldAt(off, size)
					want := f != nil && off+size <= c.Size && ((write && f.Access&hook.Write != 0) || (!write && f.Access&hook.Read != 0))
					got := ix.checkLayout(uint64(off), uint64(size), write) == nil
					if got != want {
						t.Errorf("hook %s: access of %d bytes at %d (write %v): layout allows %v, FieldAt %v", h.Name, size, off, write, got, want)
					}
				}
			}
		}
	}
}

func TestExtraRegion(t *testing.T) {
	arr := testhelpers.Array
	opts := []InterpOption{
		WithRegion(Region{Name: "rw", Addr: arr, Size: 16, Writable: true}),
		WithRegion(Region{Name: "ro", Addr: arr + 16, Size: 16}),
	}
	cases := []runCase{
		{name: "write and read", insns: prog(ld64(r1, uint64(arr)), st(DW, r1, 8, 77), ldx(DW, r0, r1, 8), exit()), want: 77},
		{name: "read-only", insns: prog(ld64(r1, uint64(arr)), ldx(DW, r0, r1, 16), st(DW, r1, 16, 1), exit()), err: ErrReadOnly},
		{name: "past", insns: prog(ld64(r1, uint64(arr)), ldx(B, r0, r1, 32), exit()), err: ErrMemory},
	}
	runTable(t, cases, Program{}, opts...)
}

const (
	idLookup  = helpers.MapLookupElem
	idReserve = helpers.RingbufReserve
	idSubmit  = helpers.RingbufSubmit
	idRead64  = helpers.ID(1000)
	idSum     = helpers.ID(1001)
	idUnwind  = helpers.ID(5)
)

// nativeProgram has two maps (a hash-like map served by the Lookup test
// helper, an array map over testhelpers.Array) and the test helpers.
func nativeProgram() Program {
	return Program{
		Maps: []MapRef{
			{Name: "hash", Handle: 0x1000, ValueSize: testhelpers.ValueSize, KeySize: 4, MaxEntries: 4},
			{Name: "array", Handle: 0x2000, ValueSize: 8, KeySize: 4, MaxEntries: 4, ArrayBase: testhelpers.Array, ArrayStride: 8},
			{Name: "ring", Handle: 0x3000, MaxEntries: 4096},
		},
		Helpers: HelperTable{
			idLookup:  {ID: idLookup, Addr: testhelpers.Lookup, Proto: helpers.Lookup(idLookup)},
			idReserve: {ID: idReserve, Addr: testhelpers.Reserve, Proto: helpers.Lookup(idReserve)},
			idSubmit:  {ID: idSubmit, Addr: testhelpers.Submit, Proto: helpers.Lookup(idSubmit)},
			idRead64:  {ID: idRead64, Addr: testhelpers.Read64},
			idSum:     {ID: idSum, Addr: testhelpers.Sum},
			idUnwind:  {ID: idUnwind, Addr: testhelpers.Unwind, UnwindOnZero: true},
		},
	}
}

// lookup is: key (r2 = value of key) on the stack, r0 = lookup(map 0, &key).
func lookup(key int32) []ins {
	return prog(st(W, r10, -4, key), ldmap(r1, asm.PseudoMapFD, 0, 0), movr(r2, r10), a64k(asm.ALUAdd, r2, -4), call(idLookup))
}

func TestHelperMemory(t *testing.T) {
	cases := []runCase{
		{name: "map value read write", insns: prog(lookup(2), jk(asm.ClassJMP, asm.JumpEq, r0, 0, 3),
			st(DW, r0, 8, 99), ldx(DW, r0, r0, 8), exit(), mov(r0, -1), exit()), want: 99},
		{name: "map value null", insns: prog(lookup(9), exit()), want: 0},
		{name: "past map value", insns: prog(lookup(1), ldx(B, r0, r0, testhelpers.ValueSize), exit()), err: ErrMemory},
		{name: "before map value", insns: prog(lookup(1), ldx(B, r0, r0, -1), exit()), err: ErrMemory},
		{name: "map handle is not memory", insns: prog(ldmap(r1, asm.PseudoMapFD, 0, 0), ldx(B, r0, r1, 0), exit()), err: ErrMemory},
		{name: "map fd loads the handle", insns: prog(ldmap(r0, asm.PseudoMapFD, 1, 0), exit()), want: 0x2000},
		{name: "map value address", insns: prog(ldmap(r1, asm.PseudoMapValue, 1, 8), st(DW, r1, 0, 5), ldx(DW, r0, r1, 0), exit()), want: 5},
		{name: "map value covers the array", insns: prog(ldmap(r1, asm.PseudoMapValue, 1, 0), st(DW, r1, 24, 6), ldx(DW, r0, r1, 24), exit()), want: 6},
		{name: "past the array", insns: prog(ldmap(r1, asm.PseudoMapValue, 1, 24), ldx(B, r0, r1, 8), exit()), err: ErrMemory},
		{name: "helper reads the stack", insns: prog(ld64(r1, 0x0102030405060708), stx(DW, r10, r1, -16),
			movr(r1, r10), a64k(asm.ALUAdd, r1, -16), call(idRead64), exit()), want: 0x0102030405060708},
		{name: "helper reads mem", insns: prog(call(idRead64), exit()), mem: memOf(1, 0, 0, 0, 0, 0, 0, 2), want: 0x0200000000000001},
		{name: "helper arguments", insns: prog(mov(r1, 1), mov(r2, 10), mov(r3, 100), mov(r4, 1000), mov(r5, 10000), call(idSum), exit()), want: 1 + 20 + 300 + 4000 + 50000},
		{name: "reserve write submit", insns: prog(ldmap(r1, asm.PseudoMapFD, 2, 0), mov(r2, 16), mov(r3, 0), call(idReserve),
			jk(asm.ClassJMP, asm.JumpEq, r0, 0, 5), st(DW, r0, 8, 3), movr(r6, r0), movr(r1, r0), mov(r2, 0), call(idSubmit),
			mov(r0, 1), exit()), want: 1},
		{name: "reserved size is arg 2", insns: prog(ldmap(r1, asm.PseudoMapFD, 2, 0), mov(r2, 16), mov(r3, 0), call(idReserve),
			st(DW, r0, 16, 3), exit()), err: ErrMemory},
		{name: "use after submit", insns: prog(ldmap(r1, asm.PseudoMapFD, 2, 0), mov(r2, 16), mov(r3, 0), call(idReserve),
			movr(r6, r0), movr(r1, r0), mov(r2, 0), call(idSubmit), st(DW, r6, 0, 3), exit()), err: ErrMemory},
		{name: "unwind on zero", insns: prog(mov(r1, 0), call(idUnwind), mov(r0, 5), exit()), want: 0},
		{name: "unwind not taken", insns: prog(mov(r1, 3), call(idUnwind), a64k(asm.ALUAdd, r0, 5), exit()), want: 8},
		{name: "callx", insns: prog(mov(r1, 3), mov(r7, int32(idUnwind)), callx(r7), exit()), want: 3},
		{name: "callx unwinds", insns: prog(mov(r1, 0), mov(r2, int32(idUnwind)), callx(r2), mov(r0, 2), exit()), want: 0},
		{name: "callx unknown id", insns: prog(mov(r2, 77), callx(r2), exit()), err: ErrUnknownHelper},
		{name: "callx huge id", insns: prog(ld64(r2, 1<<32|uint64(idUnwind)), callx(r2), exit()), err: ErrUnknownHelper},
	}
	runTable(t, cases, nativeProgram())
}

func TestReadOnlyMaps(t *testing.T) {
	p := nativeProgram()
	p.Maps[0].ReadOnly = true
	p.Maps[1].ReadOnly = true
	cases := []runCase{
		{name: "read direct value", insns: prog(ldmap(r1, asm.PseudoMapValue, 1, 8), ldx(DW, r0, r1, 0), exit()), want: nativeU64(testhelpers.Array + 8)},
		{name: "store direct value", insns: prog(ldmap(r1, asm.PseudoMapValue, 1, 8), st(DW, r1, 0, 1), exit()), err: ErrReadOnly},
		{name: "atomic direct value", insns: prog(ldmap(r1, asm.PseudoMapValue, 1, 8), mov(r2, 1), atomicOp(DW, asm.AtomicAdd, r1, r2, 0), exit()), err: ErrReadOnly},
		{name: "read looked-up value", insns: prog(lookup(0), ldx(B, r0, r0, 0), mov(r0, 3), exit()), want: 3},
		{name: "store looked-up value", insns: prog(lookup(0), st(B, r0, 0, 1), exit()), err: ErrReadOnly},
	}
	runTable(t, cases, p)
}

func TestMapValueOffsetChecked(t *testing.T) {
	p := nativeProgram()
	p.Insns = prog(ldmap(r0, asm.PseudoMapValue, 1, 32), exit())
	if _, err := NewInterpreter().Compile(&p); err == nil {
		t.Fatal("map-value offset 32 into a 32-byte array compiled")
	}
	p.Insns = prog(ldmap(r0, asm.PseudoMapValue, 0, 0), exit())
	if _, err := NewInterpreter().Compile(&p); err == nil {
		t.Fatal("map-value load of a map without ArrayBase compiled")
	}
}

// compile compiles p on a default interpreter or fails the test.
func compile(t testing.TB, p Program, opts ...InterpOption) Executable {
	t.Helper()
	x, err := NewInterpreter(opts...).Compile(&p)
	if err != nil {
		t.Fatalf("Compile: %v", err)
	}
	t.Cleanup(func() { x.Close() })
	return x
}

// nativeU64 reads the 8 bytes at a native address.
func nativeU64(a uintptr) uint64 {
	return binary.LittleEndian.Uint64(unsafe.Slice((*byte)(addrPointer(uint64(a))), 8))
}

// The stack must be 8-byte aligned so that aligned offsets from r10 are
// aligned addresses (atomics require it).
func TestStackAligned(t *testing.T) {
	var m machine
	if a := uintptr(unsafe.Pointer(&m.stack[0])); a%8 != 0 {
		t.Fatalf("stack at %#x is not 8-byte aligned", a)
	}
	if m.stackTop()%8 != 0 {
		t.Fatal("r10 is not 8-byte aligned")
	}
}
