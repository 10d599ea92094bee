package loader_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/ncclbpf/ncclbpf/loader"
)

func TestEncodeInt(t *testing.T) {
	for _, tc := range []struct {
		v    uint64
		size int
		want []byte
		ok   bool
	}{
		{1, 1, []byte{1}, true},
		{255, 1, []byte{255}, true},
		{256, 1, nil, false},
		{^uint64(0), 1, []byte{255}, true}, // -1
		{^uint64(0) - 200, 1, nil, false},  // -201
		{0x12345678, 4, []byte{0x78, 0x56, 0x34, 0x12}, true},
		{1 << 32, 4, nil, false},
		{1 << 40, 8, []byte{0, 0, 0, 0, 0, 1, 0, 0}, true},
		{1, 3, nil, false},
	} {
		b, err := loader.EncodeInt(tc.v, tc.size)
		if (err == nil) != tc.ok || (tc.ok && string(b) != string(tc.want)) {
			t.Errorf("EncodeInt(%#x, %d) = %v, %v", tc.v, tc.size, b, err)
		}
	}
}

// TestVariableSet sets variables of a copy: integers and raw bytes land in
// the data section's contents at the variable's offset, bad values are
// refused, and the original spec is not changed.
func TestVariableSet(t *testing.T) {
	orig := mustLoad(t, "policy.o")
	c := orig.Copy()
	_, ro := c.Map(".rodata")
	_, ro0 := orig.Map(".rodata")
	before := bytes.Clone(ro0.Data())
	var v8, v4 *loader.VariableSpec
	for _, v := range c.Variables {
		if v.Map >= 0 && c.Maps[v.Map] == ro {
			switch v.Size {
			case 8:
				v8 = v
			case 4:
				v4 = v
			}
		}
	}
	if v8 == nil || v4 == nil {
		t.Fatalf("policy.o: want an 8-byte and a 4-byte variable in .rodata, have %d variables", len(c.Variables))
	}
	if err := v8.Set(uint64(0x0102030405060708)); err != nil {
		t.Fatal(err)
	}
	if got := ro.Data()[v8.Offset : v8.Offset+8]; !bytes.Equal(got, []byte{8, 7, 6, 5, 4, 3, 2, 1}) {
		t.Errorf("%s after Set: %x", v8.Name, got)
	}
	if err := v4.Set(-2); err != nil {
		t.Fatal(err)
	}
	if got := v4.Value(); !bytes.Equal(got, []byte{0xfe, 0xff, 0xff, 0xff}) {
		t.Errorf("%s after Set(-2): %x", v4.Name, got)
	}
	if err := v4.Set([]byte{1, 2, 3, 4}); err != nil || !bytes.Equal(v4.Value(), []byte{1, 2, 3, 4}) {
		t.Errorf("%s after Set(bytes): %x, %v", v4.Name, v4.Value(), err)
	}
	for _, bad := range []struct {
		v    any
		want string
	}{
		{uint64(1) << 40, "does not fit"},
		{[]byte{1, 2}, "2 bytes given, the variable has 4"},
		{"7", "cannot set a variable from a string"},
	} {
		if err := v4.Set(bad.v); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("Set(%v): %v, want %q", bad.v, err, bad.want)
		}
	}
	if !bytes.Equal(ro0.Data(), before) || orig.Variable(v4.Name).Value() == nil ||
		bytes.Equal(orig.Variable(v4.Name).Value(), v4.Value()) {
		t.Errorf("Set on a copy changed the original: .rodata %x, was %x", ro0.Data(), before)
	}
}
