package maps_test

import (
	"bytes"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ncclbpf/ncclbpf/helpers"
	"github.com/ncclbpf/ncclbpf/maps"
	"github.com/ncclbpf/ncclbpf/maps/internal/ctest"
)

func TestKtimeAndRandom(t *testing.T) {
	k := addr(helpers.KtimeGetNs)
	a := ctest.Call(k, 0, 0, 0, 0, 0)
	time.Sleep(2 * time.Millisecond)
	b := ctest.Call(k, 0, 0, 0, 0, 0)
	if b <= a || b-a < 2e6 || b-a > 2e9 {
		t.Errorf("ktime %d then %d", a, b)
	}
	r := addr(helpers.GetPrandomU32)
	seen := map[uint64]bool{}
	var ones [32]int
	const n = 4096
	for i := 0; i < n; i++ {
		v := ctest.Call(r, 0, 0, 0, 0, 0)
		if v>>32 != 0 {
			t.Fatalf("prandom returned %#x", v)
		}
		seen[v] = true
		for bit := 0; bit < 32; bit++ {
			ones[bit] += int(v >> bit & 1)
		}
	}
	if len(seen) < n-2 {
		t.Errorf("only %d distinct values out of %d", len(seen), n)
	}
	for bit, c := range ones {
		if c < n/2-300 || c > n/2+300 {
			t.Errorf("bit %d set %d times out of %d", bit, c, n)
		}
	}
}

func TestPrintkFormat(t *testing.T) {
	for _, tc := range []struct {
		fmt  string
		args []uint64
		want string
	}{
		{"plain", nil, "plain"},
		{"%d %i %u", []uint64{^uint64(0), 5, ^uint64(0)}, "-1 5 4294967295"},
		{"%lld %llu %llx", []uint64{^uint64(0), ^uint64(0), 0xdeadbeef12}, "-1 18446744073709551615 deadbeef12"},
		{"%ld|%lu|%lx", []uint64{1 << 40, 7, 255}, "1099511627776|7|ff"},
		{"%x %X", []uint64{0x1abcdef00, 0xab}, "abcdef00 AB"},
		{"%5d|%-5d|%05d", []uint64{42, 42, uint64(0xffffffff) - 41}, "   42|42   |-0042"},
		{"100%% %c", []uint64{'!'}, "100% !"},
		{"%d", []uint64{1 << 31}, "-2147483648"},
		{"%lld", []uint64{1 << 63}, "-9223372036854775808"},
		{"line\n", nil, "line\n"},
	} {
		got, ok := maps.FormatPrintk(append([]byte(tc.fmt), 0), tc.args...)
		if !ok || got != tc.want {
			t.Errorf("%q: %q %v, want %q", tc.fmt, got, ok, tc.want)
		}
	}
	for _, bad := range []string{"%s", "%p", "%d %d %d %d", "%", "%q", "%lc", "%100d"} {
		if got, ok := maps.FormatPrintk(append([]byte(bad), 0), 1, 2, 3); ok {
			t.Errorf("%q accepted: %q", bad, got)
		}
	}
	if _, ok := maps.FormatPrintk([]byte("no nul")); ok {
		t.Error("format without NUL accepted")
	}
	long := strings.Repeat("x", 600) + "%d"
	if got, ok := maps.FormatPrintk(append([]byte(long), 0), 1); !ok || len(got) != 511 {
		t.Errorf("long line: %d bytes, %v", len(got), ok)
	}
}

// printk calls bpf_trace_printk through its native pointer.
func printk(c *caller, format string, args ...uint64) int64 {
	var a [3]uint64
	copy(a[:], args)
	f := append([]byte(format), 0)
	return int64(ctest.Call(addr(helpers.TracePrintk), c.mem(f), uint64(len(f)), a[0], a[1], a[2]))
}

func TestPrintkSinkAndRateLimit(t *testing.T) {
	c := newCaller(t)
	maps.CapturePrintk(true)
	defer maps.CapturePrintk(false)
	defer maps.SetPrintkRate(20, 40)
	maps.SetPrintkRate(0, 0)
	maps.DrainPrintk()
	if n := printk(c, "tuner: coll %d bytes %llu\n", 3, 1<<20); n != int64(len("tuner: coll 3 bytes 1048576\n")) {
		t.Errorf("printk returned %d", n)
	}
	if n := printk(c, "bad %s", 1); n != -int64(syscall.EINVAL) {
		t.Errorf("printk %%s returned %d", n)
	}
	if got := maps.DrainPrintk(); len(got) != 1 || got[0] != "tuner: coll 3 bytes 1048576" {
		t.Errorf("captured %q", got)
	}

	// 1 line per second, bursts of 3: of 10 quick lines, 3 pass.
	maps.SetPrintkRate(1, 3)
	before := maps.PrintkDropped()
	for i := 0; i < 10; i++ {
		printk(c, "n=%d", uint64(i))
	}
	if got := maps.DrainPrintk(); strings.Join(got, ",") != "n=0,n=1,n=2" {
		t.Errorf("rate-limited lines %q", got)
	}
	if d := maps.PrintkDropped() - before; d != 7 {
		t.Errorf("dropped %d, want 7", d)
	}
	// The next allowed line is preceded by the drop count.
	maps.SetPrintkRate(1000, 1)
	printk(c, "after")
	if got := maps.DrainPrintk(); len(got) != 2 || !strings.HasPrefix(got[0], "7 bpf_printk lines dropped") || got[1] != "after" {
		t.Errorf("after the limit: %q", got)
	}
}

func TestRingBuf(t *testing.T) {
	m := mustNew(t, maps.Spec{Name: "rb", Type: maps.RingBuf, MaxEntries: 4096})
	c := newCaller(t)
	h := uint64(m.Handle())
	reserve := func(n uint64) uint64 { return ctest.Call(addr(helpers.RingbufReserve), h, n, 0, 0, 0) }
	submit := func(p uint64) { ctest.Call(addr(helpers.RingbufSubmit), p, 0, 0, 0, 0) }
	discard := func(p uint64) { ctest.Call(addr(helpers.RingbufDiscard), p, 0, 0, 0, 0) }
	output := func(b []byte, flags uint64) int64 {
		return int64(ctest.Call(addr(helpers.RingbufOutput), h, c.mem(b), uint64(len(b)), flags, 0))
	}
	read := func() []string {
		var out []string
		if _, err := m.ReadRing(func(r []byte) bool { out = append(out, string(r)); return true }); err != nil {
			t.Fatal(err)
		}
		return out
	}
	if reserve(4096) != 0 || reserve(1<<31) != 0 || ctest.Call(addr(helpers.RingbufReserve), h, 8, 1, 0, 0) != 0 {
		t.Error("oversized reserve or bad flags accepted")
	}
	if output([]byte("x"), 4) != -int64(syscall.EINVAL) {
		t.Error("output with bad flags accepted")
	}
	// Order, discard, and a reserved record holding back later ones.
	p1 := reserve(5)
	copy(ctest.Bytes(p1, 5), "first")
	p2 := reserve(3)
	copy(ctest.Bytes(p2, 3), "bad")
	if output([]byte("third"), 0) != 0 {
		t.Fatal("output failed")
	}
	if got := read(); len(got) != 0 {
		t.Errorf("read before submit: %q", got)
	}
	submit(p1)
	discard(p2)
	if got := read(); strings.Join(got, ",") != "first,third" {
		t.Errorf("read %q", got)
	}
	if m.RingPending() != 0 {
		t.Errorf("pending %d", m.RingPending())
	}
	// Full: 4096 bytes hold 32 records of 8+120 bytes; then 31 of them
	// and one of 8+112 leave room for 8 bytes only.
	rec := make([]byte, 120)
	n := 0
	for output(rec, 0) == 0 {
		n++
	}
	if n != 32 || m.RingPending() != 4096 {
		t.Errorf("fit %d records of 128 bytes, pending %d", n, m.RingPending())
	}
	if got := read(); len(got) != 32 {
		t.Errorf("read %d records", len(got))
	}
	for i := 0; i < 31; i++ {
		output(rec, 0)
	}
	if output(rec[:112], 0) != 0 || output([]byte{1}, 0) != -int64(syscall.EAGAIN) || reserve(1) != 0 {
		t.Errorf("near-full ring: pending %d", m.RingPending())
	}
	if got := read(); len(got) != 32 {
		t.Errorf("read %d records", len(got))
	}
	// Wraparound: records of varying size cross the end of the area and
	// stay contiguous.
	for i := 0; i < 500; i++ {
		b := make([]byte, 1+i%700)
		for j := range b {
			b[j] = byte(i + j)
		}
		if output(b, 0) != 0 {
			t.Fatalf("output %d failed, pending %d", i, m.RingPending())
		}
		got := read()
		if len(got) != 1 || got[0] != string(b) {
			t.Fatalf("record %d corrupted", i)
		}
	}
	// Stopping early keeps the rest.
	output([]byte("a"), 0)
	output([]byte("b"), 0)
	if k, _ := m.ReadRing(func([]byte) bool { return false }); k != 1 || strings.Join(read(), "") != "b" {
		t.Error("ReadRing stop")
	}
	arr := mustNew(t, maps.Spec{Name: "a", Type: maps.Array, KeySize: 4, ValueSize: 4, MaxEntries: 1})
	if _, err := arr.ReadRing(func([]byte) bool { return true }); err == nil {
		t.Error("ReadRing on an array")
	}
	if ctest.Call(addr(helpers.RingbufReserve), uint64(arr.Handle()), 8, 0, 0, 0) != 0 {
		t.Error("reserve on an array")
	}
	if c.lookup(m, nil) != 0 {
		t.Error("lookup on a ring buffer")
	}
}

// FuzzPrintkFormat: any format either formats within bounds or is refused;
// the output never exceeds the buffer (go test -fuzz FuzzPrintkFormat ./maps/).
func FuzzPrintkFormat(f *testing.F) {
	for _, s := range []string{"%d", "%llx %5u %-08d", "%%%c", "%s", "%l", "%0", strings.Repeat("%d", 4)} {
		f.Add([]byte(s), uint64(1), uint64(1<<63))
	}
	f.Fuzz(func(t *testing.T, format []byte, a, b uint64) {
		out, ok := maps.FormatPrintk(append(format, 0), a, b, a^b)
		if !ok {
			return
		}
		if len(out) > 511 {
			t.Fatalf("%q: %d bytes", format, len(out))
		}
		if plain := string(format[:min(len(format), 511)]); bytes.IndexByte(format, 0) < 0 &&
			!strings.Contains(string(format), "%") && out != plain {
			t.Fatalf("%q formatted as %q", format, out)
		}
	})
}
