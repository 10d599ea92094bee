package maps

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/cilium/ebpf/btf"
)

// MapDump is a map's contents decoded for people (text) and tools (JSON).
type MapDump struct {
	Name       string  `json:"name"`
	Type       string  `json:"type"`
	KeySize    uint32  `json:"key_size"`
	ValueSize  uint32  `json:"value_size"`
	MaxEntries uint32  `json:"max_entries"`
	Frozen     bool    `json:"frozen,omitempty"`
	Entries    []Entry `json:"entries"`
}

// Entry is one decoded entry. Key and Value are decoded with the map's BTF
// types when it has them: integers (int64 or uint64, never through a
// float), bool, Float, char arrays (string), EnumName, Pointer, Struct
// (structs, unions and the variables of a global data section), []any for
// arrays, Bytes otherwise. The key of an array without a key type (a
// global data section) is its index. For PerCPUArray maps Value is a
// PerCPU holding the slots whose value is not all zero. DecodeDump reads
// the JSON form back: integers then are json.Number.
type Entry struct {
	Key   any `json:"key"`
	Value any `json:"value"`
}

// Field is one named member of a decoded struct, union or data section.
type Field struct {
	Name  string
	Value any
}

// Struct is a decoded struct, union or data section, fields in order.
type Struct []Field

// MarshalJSON writes s as an object with its fields in order.
func (s Struct) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, f := range s {
		if i > 0 {
			b.WriteByte(',')
		}
		name, _ := marshalNoEscape(f.Name)
		val, err := marshalNoEscape(f.Value)
		if err != nil {
			return nil, fmt.Errorf("field %s: %w", f.Name, err)
		}
		b.Write(name)
		b.WriteByte(':')
		b.Write(val)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// marshalNoEscape is json.Marshal without HTML escaping.
func marshalNoEscape(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// Bytes are undecoded bytes, shown in hex.
type Bytes []byte

// MarshalJSON writes b as a hex string.
func (b Bytes) MarshalJSON() ([]byte, error) { return json.Marshal(hex.EncodeToString(b)) }

// EnumName is the name of a decoded enum value.
type EnumName string

// Pointer is a decoded pointer value, shown in hex.
type Pointer uint64

// MarshalJSON writes p as a hex string.
func (p Pointer) MarshalJSON() ([]byte, error) { return json.Marshal(fmt.Sprintf("0x%x", uint64(p))) }

// Float is a decoded floating-point value. Its JSON form is a number, or
// the string "NaN", "+Inf" or "-Inf", which JSON numbers cannot write.
type Float float64

// MarshalJSON writes f as a number, or as a string when it is not finite.
func (f Float) MarshalJSON() ([]byte, error) {
	v := float64(f)
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return json.Marshal(strconv.FormatFloat(v, 'g', -1, 64))
	}
	return strconv.AppendFloat(nil, v, 'g', -1, 64), nil
}

// SlotValue is one slot's value of a per-CPU map entry.
type SlotValue struct {
	Slot  int `json:"slot"`
	Value any `json:"value"`
}

// PerCPU lists the non-zero slot values of a per-CPU map entry.
type PerCPU []SlotValue

// Dump reads every entry of m and decodes it (see Entry). Ring buffers have
// no entries to dump.
func Dump(m *Map) (*MapDump, error) {
	d := dumpHeader(m)
	if m.spec.Type == RingBuf {
		return d, nil
	}
	var derr error
	err := m.Iterate(func(k, v []byte) bool {
		var e Entry
		if e, derr = decodeEntry(m.spec, k, v); derr != nil {
			return false
		}
		d.Entries = append(d.Entries, e)
		return true
	})
	if err == nil {
		err = derr
	}
	if err != nil {
		return nil, err
	}
	return d, nil
}

// DumpKey reads the entry of m under key and decodes it as Dump does: a
// MapDump with that one entry. A key with no entry is ErrKeyNotExist.
func DumpKey(m *Map, key []byte) (*MapDump, error) {
	v, err := m.Lookup(key)
	if err != nil {
		return nil, err
	}
	e, err := decodeEntry(m.spec, key, v)
	if err != nil {
		return nil, err
	}
	d := dumpHeader(m)
	d.Entries = append(d.Entries, e)
	return d, nil
}

func dumpHeader(m *Map) *MapDump {
	s := m.Spec()
	return &MapDump{Name: s.Name, Type: s.Type.String(), KeySize: s.KeySize, ValueSize: s.ValueSize,
		MaxEntries: s.MaxEntries, Frozen: m.Frozen(), Entries: []Entry{}}
}

// decodeEntry decodes one key and its value (for PerCPUArray, every slot).
func decodeEntry(s Spec, k, v []byte) (Entry, error) {
	keyType := s.Key
	if isVoid(keyType) && (s.Type == Array || s.Type == PerCPUArray) && s.KeySize == 4 {
		// Arrays without a key type (global data sections): the index.
		keyType = &btf.Int{Name: "__u32", Size: 4}
	}
	var e Entry
	var err error
	if e.Key, err = decodeBTF(keyType, k); err != nil {
		return e, fmt.Errorf("map %q: key %x: %w", s.Name, k, err)
	}
	if s.Type != PerCPUArray {
		if e.Value, err = decodeBTF(s.Value, v); err != nil {
			return e, fmt.Errorf("map %q: value of key %x: %w", s.Name, k, err)
		}
		return e, nil
	}
	var pc PerCPU
	stride := int((s.ValueSize + 7) &^ 7)
	for slot := 0; slot < PerCPUSlots; slot++ {
		raw := v[slot*stride : slot*stride+int(s.ValueSize)]
		if allZero(raw) {
			continue
		}
		val, err := decodeBTF(s.Value, raw)
		if err != nil {
			return e, fmt.Errorf("map %q: key %x slot %d: %w", s.Name, k, slot, err)
		}
		pc = append(pc, SlotValue{slot, val})
	}
	e.Value = pc
	return e, nil
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// isVoid reports whether t is missing or has no size (void).
func isVoid(t btf.Type) bool {
	if t == nil {
		return true
	}
	_, ok := btf.UnderlyingType(t).(*btf.Void)
	return ok
}

// decodeBTF decodes b as a value of type t; without a type, as Bytes.
func decodeBTF(t btf.Type, b []byte) (any, error) {
	if isVoid(t) {
		return Bytes(append([]byte(nil), b...)), nil
	}
	return decodeType(t, b, 0)
}

func decodeType(t btf.Type, b []byte, depth int) (any, error) {
	if depth > 32 {
		return nil, fmt.Errorf("BTF type nested too deeply")
	}
	t = btf.UnderlyingType(t)
	size, err := btf.Sizeof(t)
	if err == nil && size > len(b) {
		return nil, fmt.Errorf("%s needs %d bytes, have %d", typeName(t), size, len(b))
	}
	switch t := t.(type) {
	case *btf.Int:
		return decodeInt(b[:t.Size], t.Encoding)
	case *btf.Enum:
		v, err := decodeInt(b[:t.Size], btf.Unsigned)
		if err != nil {
			return nil, err
		}
		u := v.(uint64)
		for _, ev := range t.Values {
			if ev.Value == u {
				return EnumName(ev.Name), nil
			}
		}
		if t.Signed {
			return signExtend(u, int(t.Size)*8), nil
		}
		return u, nil
	case *btf.Pointer:
		return Pointer(binary.NativeEndian.Uint64(b)), nil
	case *btf.Float:
		switch t.Size {
		case 4:
			return Float(math.Float32frombits(binary.NativeEndian.Uint32(b))), nil
		case 8:
			return Float(math.Float64frombits(binary.NativeEndian.Uint64(b))), nil
		}
		return Bytes(append([]byte(nil), b[:t.Size]...)), nil
	case *btf.Array:
		return decodeArray(t, b, depth)
	case *btf.Struct:
		return decodeMembers(t.Members, b, depth)
	case *btf.Union:
		return decodeMembers(t.Members, b, depth)
	case *btf.Datasec:
		out := Struct{}
		for _, vs := range t.Vars {
			v, ok := vs.Type.(*btf.Var)
			if !ok || int(vs.Offset+vs.Size) > len(b) {
				continue
			}
			val, err := decodeType(v.Type, b[vs.Offset:vs.Offset+vs.Size], depth+1)
			if err != nil {
				return nil, fmt.Errorf("variable %s: %w", v.Name, err)
			}
			out = append(out, Field{v.Name, val})
		}
		return out, nil
	}
	if err != nil {
		return Bytes(append([]byte(nil), b...)), nil
	}
	return Bytes(append([]byte(nil), b[:size]...)), nil
}

func typeName(t btf.Type) string {
	if n := t.TypeName(); n != "" {
		return n
	}
	return fmt.Sprintf("%T", t)
}

func decodeInt(b []byte, enc btf.IntEncoding) (any, error) {
	var u uint64
	switch len(b) {
	case 1:
		u = uint64(b[0])
	case 2:
		u = uint64(binary.NativeEndian.Uint16(b))
	case 4:
		u = uint64(binary.NativeEndian.Uint32(b))
	case 8:
		u = binary.NativeEndian.Uint64(b)
	default: // 128-bit integers and odd sizes
		return Bytes(append([]byte(nil), b...)), nil
	}
	switch {
	case enc&btf.Bool != 0:
		return u != 0, nil
	case enc&btf.Signed != 0:
		return signExtend(u, len(b)*8), nil
	}
	return u, nil
}

func signExtend(u uint64, bits int) int64 {
	shift := 64 - bits
	return int64(u<<shift) >> shift
}

// decodeArray shows char arrays as strings (up to the first NUL) when
// they hold text, other arrays element by element.
func decodeArray(t *btf.Array, b []byte, depth int) (any, error) {
	elem := btf.UnderlyingType(t.Type)
	esize, err := btf.Sizeof(elem)
	if err != nil {
		return nil, fmt.Errorf("array element: %w", err)
	}
	if i, ok := elem.(*btf.Int); ok && i.Size == 1 && (i.Encoding&btf.Char != 0 || i.Name == "char") {
		s := b[:t.Nelems]
		if n := bytes.IndexByte(s, 0); n >= 0 {
			s = s[:n]
		}
		if isText(s) {
			return string(s), nil
		}
	}
	out := make([]any, 0, t.Nelems)
	for i := 0; i < int(t.Nelems); i++ {
		v, err := decodeType(elem, b[i*esize:], depth+1)
		if err != nil {
			return nil, fmt.Errorf("[%d]: %w", i, err)
		}
		out = append(out, v)
	}
	return out, nil
}

func isText(s []byte) bool {
	for _, c := range s {
		if c < 0x20 || c > 0x7e {
			return false
		}
	}
	return true
}

func decodeMembers(members []btf.Member, b []byte, depth int) (any, error) {
	out := Struct{}
	for i, m := range members {
		name := m.Name
		if name == "" {
			name = fmt.Sprintf("_%d", i) // anonymous member
		}
		var val any
		var err error
		if m.BitfieldSize > 0 {
			val, err = decodeBitfield(m, b)
		} else {
			off := int(m.Offset.Bytes())
			if off > len(b) {
				return nil, fmt.Errorf("member %s at byte %d is past the value's %d bytes", name, off, len(b))
			}
			val, err = decodeType(m.Type, b[off:], depth+1)
		}
		if err != nil {
			return nil, fmt.Errorf("member %s: %w", name, err)
		}
		out = append(out, Field{name, val})
	}
	return out, nil
}

func decodeBitfield(m btf.Member, b []byte) (any, error) {
	off, bits := uint32(m.Offset), uint32(m.BitfieldSize)
	if bits > 64 || (off+bits+7)/8 > uint32(len(b)) {
		return nil, fmt.Errorf("bitfield of %d bits at bit %d does not fit", bits, off)
	}
	var window [16]byte
	copy(window[:], b[off/8:min(uint32(len(b)), off/8+16)])
	lo, hi := binary.LittleEndian.Uint64(window[:8]), binary.LittleEndian.Uint64(window[8:])
	sh := off % 8
	u := lo >> sh
	if sh > 0 {
		u |= hi << (64 - sh)
	}
	if bits < 64 {
		u &= 1<<bits - 1
	}
	if i, ok := btf.UnderlyingType(m.Type).(*btf.Int); ok && i.Encoding&btf.Signed != 0 {
		return signExtend(u, int(bits)), nil
	}
	return u, nil
}

// WriteText writes d for people:
//
//	map counters (hash, key 4 bytes, value 16 bytes, 2/64 entries)
//	  7: {calls: 3, bytes: 4096}
func (d *MapDump) WriteText(w io.Writer) error {
	var b strings.Builder
	frozen := ""
	if d.Frozen {
		frozen = ", frozen"
	}
	fmt.Fprintf(&b, "map %s (%s, key %d bytes, value %d bytes, %d/%d entries%s)\n",
		d.Name, d.Type, d.KeySize, d.ValueSize, len(d.Entries), d.MaxEntries, frozen)
	_, err := io.WriteString(w, b.String())
	if err == nil {
		err = d.WriteEntries(w)
	}
	return err
}

// WriteEntries writes d's entries as WriteText does, without the header
// line (what a lookup of one key prints).
func (d *MapDump) WriteEntries(w io.Writer) error {
	var b strings.Builder
	for _, e := range d.Entries {
		b.WriteString("  ")
		writeValue(&b, e.Key)
		b.WriteString(": ")
		writeValue(&b, e.Value)
		b.WriteByte('\n')
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// FormatValue formats a decoded key or value (Entry.Key, Entry.Value) as
// WriteText prints it: a struct as {name: value, ...}, an array as
// [a, b], a per-CPU value as per-cpu{slot N: value, ...}, bytes as 0x
// and hex, a string quoted, a pointer as 0x and hex, nil as (none).
func FormatValue(v any) string {
	var b strings.Builder
	writeValue(&b, v)
	return b.String()
}

func writeValue(b *strings.Builder, v any) {
	switch v := v.(type) {
	case nil:
		b.WriteString("(none)")
	case Struct:
		b.WriteByte('{')
		for i, f := range v {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(f.Name)
			b.WriteString(": ")
			writeValue(b, f.Value)
		}
		b.WriteByte('}')
	case []any:
		b.WriteByte('[')
		for i, e := range v {
			if i > 0 {
				b.WriteString(", ")
			}
			writeValue(b, e)
		}
		b.WriteByte(']')
	case PerCPU:
		b.WriteString("per-cpu{")
		for i, s := range v {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(b, "slot %d: ", s.Slot)
			writeValue(b, s.Value)
		}
		b.WriteByte('}')
	case Bytes:
		b.WriteString("0x")
		b.WriteString(hex.EncodeToString(v))
	case string:
		b.WriteString(strconv.Quote(v))
	case Pointer:
		fmt.Fprintf(b, "0x%x", uint64(v))
	case Float:
		b.WriteString(strconv.FormatFloat(float64(v), 'g', -1, 64))
	case json.Number:
		b.WriteString(v.String())
	default:
		fmt.Fprint(b, v)
	}
}
