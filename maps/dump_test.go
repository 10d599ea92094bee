package maps_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/cilium/ebpf/btf"

	"github.com/ncclbpf/ncclbpf/maps"
)

var (
	btfU8  = &btf.Int{Name: "__u8", Size: 1}
	btfU32 = &btf.Int{Name: "__u32", Size: 4}
	btfS32 = &btf.Int{Name: "__s32", Size: 4, Encoding: btf.Signed}
	btfU64 = &btf.Int{Name: "__u64", Size: 8}
	btfS64 = &btf.Int{Name: "__s64", Size: 8, Encoding: btf.Signed}
	btfF64 = &btf.Float{Name: "double", Size: 8}
	btfChr = &btf.Int{Name: "char", Size: 1, Encoding: btf.Char | btf.Signed}
)

// dumpCases are maps whose dump must keep every integer exact, in the
// text form, in the JSON form and after reading the JSON form back.
var dumpCases = []struct {
	name     string
	spec     maps.Spec
	kvs      [][2][]byte
	wantText string // the lines after the header
	wantJSON string // a part of the JSON form
	backText string // the lines after the JSON form is read back, when not wantText
}{
	{
		name:     "plain u64 values",
		spec:     maps.Spec{Name: "sizes", Type: maps.Hash, KeySize: 4, ValueSize: 8, MaxEntries: 4, Key: btfU32, Value: btfU64},
		kvs:      [][2][]byte{{u32(1), le.AppendUint64(nil, 2000000)}},
		wantText: "  1: 2000000\n",
		wantJSON: `{"key":1,"value":2000000}`,
	},
	{
		name:     "2^60+1 and the largest u64",
		spec:     maps.Spec{Name: "big", Type: maps.Array, KeySize: 4, ValueSize: 8, MaxEntries: 2, Key: btfU32, Value: btfU64},
		kvs:      [][2][]byte{{u32(0), le.AppendUint64(nil, 1<<60+1)}, {u32(1), le.AppendUint64(nil, math.MaxUint64)}},
		wantText: "  0: 1152921504606846977\n  1: 18446744073709551615\n",
		wantJSON: `{"key":0,"value":1152921504606846977},{"key":1,"value":18446744073709551615}`,
	},
	{
		name:     "negative signed values",
		spec:     maps.Spec{Name: "deltas", Type: maps.Array, KeySize: 4, ValueSize: 8, MaxEntries: 1, Key: btfU32, Value: btfS64},
		kvs:      [][2][]byte{{u32(0), le.AppendUint64(nil, uint64(1<<64-(1<<60+1)))}},
		wantText: "  0: -1152921504606846977\n",
		wantJSON: `{"key":0,"value":-1152921504606846977}`,
	},
	{
		name: "struct with an array and text",
		spec: maps.Spec{Name: "cfg", Type: maps.Hash, KeySize: 8, ValueSize: 32, MaxEntries: 2, Key: btfS64,
			Value: &btf.Struct{Name: "cfg", Size: 32, Members: []btf.Member{
				{Name: "limit", Type: btfU64, Offset: 0},
				{Name: "delta", Type: btfS32, Offset: 64},
				{Name: "small", Type: btfU8, Offset: 96},
				{Name: "tag", Type: &btf.Array{Type: btfChr, Nelems: 4}, Offset: 104},
				{Name: "hist", Type: &btf.Array{Type: btfS32, Nelems: 3}, Offset: 160},
			}}},
		kvs: [][2][]byte{{le.AppendUint64(nil, uint64(1<<64-2)), func() []byte {
			v := le.AppendUint64(nil, 1<<60+1)
			v = le.AppendUint32(v, uint32(1<<32-7))
			v = append(v, 255, '<', '&', '>', 0, 0, 0, 0)
			v = le.AppendUint32(v, 2000000)
			v = le.AppendUint32(v, uint32(1<<32-1))
			return le.AppendUint32(v, 0)
		}()}},
		wantText: `  -2: {limit: 1152921504606846977, delta: -7, small: 255, tag: "<&>", hist: [2000000, -1, 0]}` + "\n",
		wantJSON: `{"key":-2,"value":{"limit":1152921504606846977,"delta":-7,"small":255,"tag":"<&>","hist":[2000000,-1,0]}}`,
	},
	{
		name: "global data: index key, variable names",
		spec: maps.Spec{Name: ".rodata", Type: maps.Array, KeySize: 4, ValueSize: 24, MaxEntries: 1, Key: &btf.Void{},
			Value: &btf.Datasec{Name: ".rodata", Size: 24, Vars: []btf.VarSecinfo{
				{Type: &btf.Var{Name: "big", Type: btfU64}, Offset: 0, Size: 8},
				{Type: &btf.Var{Name: "neg", Type: btfS32}, Offset: 8, Size: 4},
				{Type: &btf.Var{Name: "two_m", Type: btfU64}, Offset: 16, Size: 8},
			}}},
		kvs: [][2][]byte{{u32(0), func() []byte {
			v := le.AppendUint64(nil, 1<<60+1)
			v = le.AppendUint32(v, uint32(1<<32-5))
			v = le.AppendUint32(v, 0)
			return le.AppendUint64(v, 2000000)
		}()}},
		wantText: "  0: {big: 1152921504606846977, neg: -5, two_m: 2000000}\n",
		wantJSON: `{"key":0,"value":{"big":1152921504606846977,"neg":-5,"two_m":2000000}}`,
	},
	{
		name:     "per-CPU slots",
		spec:     maps.Spec{Name: "pc", Type: maps.PerCPUArray, KeySize: 4, ValueSize: 8, MaxEntries: 1, Key: btfU32, Value: btfU64},
		kvs:      [][2][]byte{{u32(0), append(make([]byte, 2*8), le.AppendUint64(nil, 1<<60+1)...)}},
		wantText: "  0: per-cpu{slot 2: 1152921504606846977}\n",
		wantJSON: `{"key":0,"value":[{"slot":2,"value":1152921504606846977}]}`,
	},
	{
		name:     "floats, finite or not",
		spec:     maps.Spec{Name: "f", Type: maps.Array, KeySize: 4, ValueSize: 8, MaxEntries: 2, Key: btfU32, Value: btfF64},
		kvs:      [][2][]byte{{u32(0), le.AppendUint64(nil, math.Float64bits(2.5))}, {u32(1), le.AppendUint64(nil, math.Float64bits(math.NaN()))}},
		wantText: "  0: 2.5\n  1: NaN\n",
		wantJSON: `{"key":0,"value":2.5},{"key":1,"value":"NaN"}`,
		backText: "  0: 2.5\n  1: \"NaN\"\n", // JSON has no NaN: a string
	},
}

func TestDumpExact(t *testing.T) {
	for _, tc := range dumpCases {
		t.Run(tc.name, func(t *testing.T) {
			m := mustNew(t, tc.spec)
			for _, kv := range tc.kvs {
				v := kv[1]
				if tc.spec.Type == maps.PerCPUArray {
					v = append(v, make([]byte, m.ValueBufSize()-len(v))...)
				}
				if err := m.Update(kv[0], v, maps.UpdateAny); err != nil {
					t.Fatal(err)
				}
			}
			d, err := maps.Dump(m)
			if err != nil {
				t.Fatal(err)
			}
			text := dumpText(t, d)
			if body := text[strings.IndexByte(text, '\n')+1:]; body != tc.wantText {
				t.Errorf("text:\n%s\nwant:\n%s", body, tc.wantText)
			}
			var js bytes.Buffer
			if err := d.WriteJSON(&js); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(js.String(), tc.wantJSON) {
				t.Errorf("JSON:\n%s\nwant a part:\n%s", js.String(), tc.wantJSON)
			}
			// What a control client gets: json.Marshal's form, read back.
			wire, err := json.Marshal(d)
			if err != nil {
				t.Fatal(err)
			}
			back, err := maps.DecodeDump(wire)
			if err != nil {
				t.Fatal(err)
			}
			wantBack := text
			if tc.backText != "" {
				wantBack = text[:strings.IndexByte(text, '\n')+1] + tc.backText
			}
			if got := dumpText(t, back); got != wantBack {
				t.Errorf("text after the JSON form:\n%s\nwant:\n%s", got, wantBack)
			}
			var again bytes.Buffer
			if err := back.WriteJSON(&again); err != nil {
				t.Fatal(err)
			}
			if again.String() != js.String() {
				t.Errorf("JSON after reading it back:\n%s\nwant:\n%s", again.String(), js.String())
			}
		})
	}
}

func dumpText(t *testing.T, d *maps.MapDump) string {
	t.Helper()
	var b bytes.Buffer
	if err := d.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestDecodeDumpErrors(t *testing.T) {
	for _, in := range []string{
		``,
		`{"name":"x","entries":[{"key":1,"value":[1,}]}`,
		`{"name":"x","type":"percpu_array","entries":[{"key":0,"value":[{"value":1,"slot":0}]}]}`,
		`{"name":"x","type":"percpu_array","entries":[{"key":0,"value":[{"slot":1.5,"value":1}]}]}`,
		`{"name":"x","entries":[{"key":` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `,"value":1}]}`,
	} {
		if _, err := maps.DecodeDump([]byte(in)); err == nil {
			t.Errorf("DecodeDump(%.60q) accepted", in)
		}
	}
}

// TestDumpKey: one entry, decoded as Dump decodes it; a missing key is
// ErrKeyNotExist.
func TestDumpKey(t *testing.T) {
	m := mustNew(t, maps.Spec{Name: "deltas", Type: maps.Hash, KeySize: 4, ValueSize: 8, MaxEntries: 4, Key: btfU32, Value: btfS64})
	m.Update(u32(7), le.AppendUint64(nil, uint64(1<<64-(1<<60+1))), maps.UpdateAny)
	m.Update(u32(8), le.AppendUint64(nil, 1), maps.UpdateAny)
	d, err := maps.DumpKey(m, u32(7))
	if err != nil {
		t.Fatal(err)
	}
	if got := dumpText(t, d); got != "map deltas (hash, key 4 bytes, value 8 bytes, 1/4 entries)\n  7: -1152921504606846977\n" {
		t.Errorf("text:\n%s", got)
	}
	if _, err := maps.DumpKey(m, u32(9)); !errors.Is(err, maps.ErrKeyNotExist) {
		t.Errorf("missing key: %v", err)
	}
	arr := mustNew(t, maps.Spec{Name: "hits", Type: maps.Array, KeySize: 4, ValueSize: 8, MaxEntries: 2})
	if err := arr.Delete(u32(1)); !errors.Is(err, maps.ErrNotSupported) || !strings.Contains(err.Error(), "update the entry to zero instead") {
		t.Errorf("array delete: %v", err)
	}
}
