package enginetest

import (
	"encoding/binary"
	"fmt"
	"math"
	"runtime"
	"sort"
	"strings"
	"syscall"
	"testing"

	"github.com/ncclbpf/ncclbpf/asm"
	"github.com/ncclbpf/ncclbpf/helpers"
	"github.com/ncclbpf/ncclbpf/hook"
	"github.com/ncclbpf/ncclbpf/jit/native"
	"github.com/ncclbpf/ncclbpf/maps"
	"github.com/ncclbpf/ncclbpf/verifier"
	"github.com/ncclbpf/ncclbpf/vm"
)

var le = binary.LittleEndian

// Negative errno values as programs see them in r0.
var (
	eNOENT  = neg(syscall.ENOENT)
	eEXIST  = neg(syscall.EEXIST)
	eE2BIG  = neg(syscall.E2BIG)
	eINVAL  = neg(syscall.EINVAL)
	eAGAIN  = neg(syscall.EAGAIN)
	eNoneOK = uint64(0)
)

func neg(e syscall.Errno) uint64 { return uint64(-int64(e)) }

// errName prints r0 as an errno when it is one.
func errName(r0 uint64) string {
	if v := int64(r0); v < 0 && v > -4096 {
		return fmt.Sprintf("%d (-%v)", v, syscall.Errno(-v))
	}
	return fmt.Sprintf("%d (%#x)", r0, r0)
}

// testHook is the hook the test programs are verified against: r1 points
// to a Ctx whose four words may be read and written, every helper of
// package maps is allowed and any 64-bit value may be returned.
var testHook = func() *hook.Hook {
	var ids []helpers.ID
	for id := range maps.HelperTable() {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	var fields []hook.Field
	for i, n := range []string{"key", "val", "flags", "out"} {
		fields = append(fields, hook.Field{Name: n, Offset: 8 * i, Size: 8, Access: hook.Read | hook.Write})
	}
	return &hook.Hook{
		Name:    "enginetest",
		Context: hook.Context{Name: "et_ctx", Size: CtxSize, Fields: fields},
		Helpers: ids,
		Return:  hook.Range{Min: math.MinInt64, Max: math.MaxInt64},
		Doc:     "test hook of package enginetest",
	}
}()

// engines are the engines every test runs on.
func engines() []vm.Engine { return []vm.Engine{vm.NewInterpreter(), native.New()} }

// onEngines runs fn as a subtest per engine.
func onEngines(t *testing.T, fn func(t *testing.T, e vm.Engine)) {
	t.Helper()
	for _, e := range engines() {
		t.Run(e.Name(), func(t *testing.T) { fn(t, e) })
	}
}

// newMap creates a map closed at the end of the test.
func newMap(tb testing.TB, s maps.Spec) *maps.Map {
	tb.Helper()
	m, err := maps.New(s)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { m.Close() })
	return m
}

// program assembles src, verifies it against testHook with the maps ms
// (map(i) is ms[i]) and compiles it on e.
func program(tb testing.TB, e vm.Engine, src string, ms ...*maps.Map) vm.Executable {
	tb.Helper()
	insns, err := asm.Assemble(src)
	if err != nil {
		tb.Fatalf("assemble: %v", err)
	}
	p := &vm.Program{Name: tb.Name(), Insns: insns, Helpers: maps.HelperTable()}
	cfg := verifier.Config{Hook: testHook}
	for _, m := range ms {
		spec := m.Spec()
		p.Maps = append(p.Maps, m.Ref())
		cfg.Maps = append(cfg.Maps, &spec)
	}
	if _, err := cfg.Verify(insns, nil); err != nil {
		tb.Fatalf("verify: %v\n%s", err, numbered(src))
	}
	x, err := e.Compile(p)
	if err != nil {
		tb.Fatalf("compile on %s: %v", e.Name(), err)
	}
	tb.Cleanup(func() { x.Close() })
	return x
}

func numbered(src string) string {
	var b strings.Builder
	for i, l := range strings.Split(strings.Trim(src, "\n"), "\n") {
		fmt.Fprintf(&b, "%3d  %s\n", i+1, l)
	}
	return b.String()
}

// run runs x with ctx and fails the test on a fault.
func run(tb testing.TB, x vm.Executable, ctx Ctx) uint64 {
	tb.Helper()
	r0, err := x.Run(ctx.Bytes())
	if err != nil {
		tb.Fatalf("run %+v: %v", ctx, err)
	}
	return r0
}

// runCtx runs x and also returns the context afterwards.
func runCtx(tb testing.TB, x vm.Executable, ctx Ctx) (uint64, Ctx) {
	tb.Helper()
	b := ctx.Bytes()
	r0, err := x.Run(b)
	if err != nil {
		tb.Fatalf("run %+v: %v", ctx, err)
	}
	return r0, Ctx{le.Uint64(b[0:]), le.Uint64(b[8:]), le.Uint64(b[16:]), le.Uint64(b[24:])}
}

// expect checks r0 of one run.
func expect(tb testing.TB, what string, got, want uint64) {
	tb.Helper()
	if got != want {
		tb.Errorf("%s: r0 = %s, want %s", what, errName(got), errName(want))
	}
}

func u32(v uint32) []byte { return le.AppendUint32(nil, v) }
func u64(v uint64) []byte { return le.AppendUint64(nil, v) }

func val16(a, b uint64) []byte { return append(u64(a), u64(b)...) }

// lookup16 returns the two words of a 16-byte value, and whether the key
// is present.
func lookup16(tb testing.TB, m *maps.Map, key []byte) (a, b uint64, ok bool) {
	tb.Helper()
	v, err := m.Lookup(key)
	if err != nil {
		return 0, 0, false
	}
	return le.Uint64(v), le.Uint64(v[8:]), true
}

// lockThread pins the test's goroutine to its OS thread (per-CPU slots
// and the random generator are per thread).
func lockThread(t *testing.T) {
	runtime.LockOSThread()
	t.Cleanup(runtime.UnlockOSThread)
}
