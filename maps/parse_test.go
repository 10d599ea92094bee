package maps_test

import (
	"encoding/hex"
	"strings"
	"testing"

	"github.com/cilium/ebpf/btf"

	"github.com/ncclbpf/ncclbpf/maps"
)

func TestParseKeyValue(t *testing.T) {
	algo := &btf.Enum{Name: "algo", Size: 4, Values: []btf.EnumValue{{Name: "RING", Value: 1}, {Name: "TREE", Value: 0}}}
	limits := &btf.Struct{Name: "limits", Size: 24, Members: []btf.Member{
		{Name: "x", Type: btfU8, Offset: 0},
		{Name: "delta", Type: &btf.Typedef{Name: "s32", Type: btfS32}, Offset: 32},
		{Name: "hist", Type: &btf.Array{Type: btfU32, Nelems: 2}, Offset: 64},
		{Name: "algo", Type: algo, Offset: 128},
		{Name: "lo", Type: btfU32, Offset: 160, BitfieldSize: 4},
		{Name: "tag", Type: &btf.Array{Type: btfChr, Nelems: 3}, Offset: 168},
	}}
	sec := &btf.Datasec{Name: ".data", Size: 8, Vars: []btf.VarSecinfo{
		{Type: &btf.Var{Name: "counter", Type: btfS64}, Offset: 0, Size: 8}}}
	u64arr := maps.Spec{Name: "hits", Type: maps.Array, KeySize: 4, ValueSize: 8, MaxEntries: 8, Key: btfU32, Value: btfU64}
	s64hash := maps.Spec{Name: "deltas", Type: maps.Hash, KeySize: 4, ValueSize: 8, MaxEntries: 8, Key: btfU32, Value: btfS64}
	raw := maps.Spec{Name: "raw", Type: maps.Hash, KeySize: 4, ValueSize: 16, MaxEntries: 8}
	rawInt := maps.Spec{Name: "raw4", Type: maps.Hash, KeySize: 4, ValueSize: 4, MaxEntries: 8}
	structs := maps.Spec{Name: "cfg", Type: maps.Hash, KeySize: 4, ValueSize: 24, MaxEntries: 8, Key: btfU32, Value: limits}
	data := maps.Spec{Name: ".data", Type: maps.Array, KeySize: 4, ValueSize: 8, MaxEntries: 1, Key: &btf.Void{}, Value: sec}

	const none = "-" // no value given
	for _, tc := range []struct {
		spec     maps.Spec
		args     string
		key, val string // hex; val none: a key only
		err      string // a part of the error
	}{
		// A decimal key is decimal, whatever its digits; hex needs 0x or the keyword.
		{spec: u64arr, args: "1 42", key: "01000000", val: "2a00000000000000"},
		{spec: s64hash, args: "10000000 0", key: "80969800", val: "0000000000000000"},
		{spec: s64hash, args: "key 10000000", key: "80969800", val: none},
		{spec: s64hash, args: "0x10 0x2a", key: "10000000", val: "2a00000000000000"},
		{spec: s64hash, args: "010 2000000", key: "0a000000", val: "80841e0000000000"},
		// bpftool's forms.
		{spec: u64arr, args: "key hex 01 00 00 00 value hex 2a 00 00 00 00 00 00 00", key: "01000000", val: "2a00000000000000"},
		{spec: u64arr, args: "key 1 0 0 0 value 42", key: "01000000", val: "2a00000000000000"},
		{spec: u64arr, args: "key hex 01000000 value hex 0x2a00000000000000", key: "01000000", val: "2a00000000000000"},
		{spec: u64arr, args: "key 0x1 0 0 0", key: "01000000", val: none},
		{spec: raw, args: "key 7 value hex 01 02 03 04 05 06 07 08 09 0a 0b 0c 0d 0e 0f 10", key: "07000000", val: "0102030405060708090a0b0c0d0e0f10"},
		// Negative values: signed types; either range without BTF.
		{spec: s64hash, args: "1 -1", key: "01000000", val: "ffffffffffffffff"},
		{spec: s64hash, args: "key 1 value -9223372036854775808", key: "01000000", val: "0000000000000080"},
		{spec: rawInt, args: "1 -1", key: "01000000", val: "ffffffff"},
		{spec: rawInt, args: "1 4294967295", key: "01000000", val: "ffffffff"},
		// Exact beyond float64: 2^60+1.
		{spec: u64arr, args: "0 1152921504606846977", key: "00000000", val: "0100000000000010"},
		{spec: u64arr, args: "0 18446744073709551615", key: "00000000", val: "ffffffffffffffff"},
		// Structs and data sections: FIELD=VALUE settings.
		{spec: structs, args: "3 x=255,delta=-2,hist[1]=2000000,algo=RING,lo=15,tag=ab", key: "03000000",
			val: "ff000000feffffff0000000080841e00010000000f616200"},
		{spec: structs, args: "key 3 value x=1 delta=-1", key: "03000000", val: "01000000ffffffff" + strings.Repeat("00", 16)},
		{spec: data, args: "0 counter=-5", key: "00000000", val: "fbffffffffffffff"},

		// Errors say what does not fit where.
		{spec: structs, args: "3 x=300", err: "value 300 does not fit the 1-byte field x (unsigned 0..255)"},
		{spec: structs, args: "3 lo=16", err: "value 16 does not fit the 4-bit field lo (unsigned 0..15)"},
		{spec: structs, args: "3 delta=2147483648", err: "value 2147483648 does not fit the 4-byte field delta (signed -2147483648..2147483647)"},
		{spec: structs, args: "3 hist[2]=1", err: "index 2 out of range: hist has 2 elements"},
		{spec: structs, args: "3 y=1", err: `no field "y" in struct limits (fields: x, delta, hist, algo, lo, tag)`},
		{spec: structs, args: "3 algo=NVLS", err: "or a name of enum algo: RING, TREE"},
		{spec: structs, args: "3 tag=abcd", err: `text "abcd" has 4 bytes, the array holds 3`},
		{spec: structs, args: "3 5", err: "the value is struct limits: give FIELD=VALUE settings (x=...,delta=...,hist=...,algo=...,...)"},
		{spec: u64arr, args: "9 1", err: "index 9 out of range: array map hits has 8 entries"},
		{spec: u64arr, args: "key hex 09 00 00 00 value 1", err: "index 9 out of range: array map hits has 8 entries"},
		{spec: u64arr, args: "1 -1", err: "value -1 does not fit the 8-byte value (unsigned 0..18446744073709551615)"},
		{spec: s64hash, args: "4294967296 1", err: "value 4294967296 does not fit the 4-byte key (unsigned 0..4294967295)"},
		{spec: rawInt, args: "1 4294967296", err: "value 4294967296 does not fit the 4-byte value (-2147483648..4294967295)"},
		{spec: u64arr, args: "1 12z", err: `value "12z" is not an integer (decimal, or hex with 0x`},
		{spec: u64arr, args: "1 2a00000000000000", err: `value "2a00000000000000" is not an integer`},
		{spec: u64arr, args: "key hex 01 00 00 value 1", err: "key: 3 bytes given, the map's keys have 4"},
		{spec: u64arr, args: "key 1 0 0 300", err: `key: byte "300": want 0..255`},
		{spec: u64arr, args: "key hex 0g 00 00 00", err: `key: "0g" is not hex bytes`},
		{spec: u64arr, args: "1 2 3", err: "3 words given: without keywords"},
		{spec: u64arr, args: "key value 1", err: "key: no data after the keyword"},
		{spec: u64arr, args: "key 1 value", err: "value: no data after the keyword"},
		{spec: raw, args: "1 5", err: "value: the map's values have 16 bytes and no BTF type: give its bytes (value hex 01 02 ...)"},
		{spec: u64arr, args: "", err: "no key given"},
		{spec: structs, args: "3 hist[=1", err: "field hist[: missing ]"},
		{spec: structs, args: "3 hist[x]=1", err: "index [x] is not a decimal number"},
		{spec: structs, args: "3 [0]=1", err: "the value is not an array"},
		{spec: structs, args: "3 =5", err: "a setting with no field name"},
		{spec: structs, args: "3 x.y=5", err: `"y": __u8 has no fields`},
		{spec: structs, args: "3 hist=5", err: "field hist is an array of 2: set its members ([0]=...)"},
		{spec: s64hash, args: "1 0x", err: `value "0x" is not an integer`},
		{spec: s64hash, args: "1 --1", err: `value "--1" is not an integer`},
		{spec: u64arr, args: "value 1", err: "value given before the key"},
	} {
		name := tc.spec.Name + " " + tc.args
		kv, err := maps.ParseKeyValue(tc.spec, strings.Fields(tc.args))
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: error %v, want %q", name, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if got := hex.EncodeToString(kv.Key); got != tc.key {
			t.Errorf("%s: key %s, want %s", name, got, tc.key)
		}
		got := hex.EncodeToString(kv.Value)
		if kv.Value == nil {
			got = none
		}
		if got != tc.val {
			t.Errorf("%s: value %s, want %s", name, got, tc.val)
		}
	}
}

// FuzzParseKeyValue: any words give an error or a key and value of the
// map's sizes, never a panic.
func FuzzParseKeyValue(f *testing.F) {
	limits := &btf.Struct{Name: "limits", Size: 16, Members: []btf.Member{
		{Name: "x", Type: btfU8, Offset: 0},
		{Name: "lo", Type: btfU32, Offset: 8, BitfieldSize: 5},
		{Name: "hist", Type: &btf.Array{Type: btfS32, Nelems: 2}, Offset: 32},
		{Name: "tag", Type: &btf.Array{Type: btfChr, Nelems: 4}, Offset: 96},
	}}
	spec := maps.Spec{Name: "cfg", Type: maps.Array, KeySize: 4, ValueSize: 16, MaxEntries: 4, Key: btfU32, Value: limits}
	for _, s := range []string{"1 x=3,lo=31,hist[1]=-2,tag=abc", "key hex 01 00 00 00 value hex 0x01", "key 1 0 0 0 value x=1 lo=2",
		"3 hist[9]=1", "0 tag=abcdef", "-1 x=1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		kv, err := maps.ParseKeyValue(spec, strings.Fields(s))
		if err != nil {
			return
		}
		if len(kv.Key) != 4 || (kv.Value != nil && len(kv.Value) != 16) {
			t.Fatalf("%q: key %x value %x", s, kv.Key, kv.Value)
		}
	})
}
