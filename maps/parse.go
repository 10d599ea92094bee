package maps

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"syscall"

	"github.com/cilium/ebpf/btf"
)

// KeyValue is a key and, when one was given, a value, as the map stores
// them (little-endian integers, structs laid out as in C).
type KeyValue struct {
	Key   []byte
	Value []byte // nil when the words give a key only (lookup, delete)
}

// ParseKeyValue reads the key and the optional value of an entry of the
// map spec describes from command-line words, in one of these forms:
//
//	KEY [VALUE]                 one word each, typed (below)
//	key DATA [value DATA]       bpftool's keywords
//
// where DATA is
//
//	WORD                        one word, typed
//	B0 B1 ... Bn                one word per byte, decimal or 0x hex: key 1 0 0 0
//	hex H0 H1 ...               hex bytes, with or without 0x, in one word or
//	                            several: key hex 01 00 00 00, value hex 2a000000
//
// A typed word follows the BTF type of the key or value: an integer is
// decimal (10000000 is ten million, whatever its digits) or hex with a 0x
// prefix, negative only for a signed type, and must fit the type's size;
// an enum takes its names, a bool true or false, a float a decimal
// number. A struct, union, array or data section takes FIELD=VALUE
// settings, in one word separated by commas or in several words; FIELD
// is a path (limits.lo, hist[2]) and a char array takes text. Fields not
// named are zero. Without BTF, a key or value of 1, 2, 4 or 8 bytes takes
// an integer of its size, either signed or unsigned; a longer one takes
// bytes. The index of an array map's key must be below max_entries.
func ParseKeyValue(spec Spec, args []string) (*KeyValue, error) {
	if len(args) == 0 {
		return nil, errors.New("no key given (want KEY [VALUE], or key DATA [value DATA])")
	}
	var keyWords, valWords []string
	hasValue := false
	if args[0] == "key" {
		rest := args[1:]
		for i, w := range rest {
			if w == "value" {
				keyWords, valWords, hasValue = rest[:i], rest[i+1:], true
				break
			}
		}
		if !hasValue {
			keyWords = rest
		}
		if len(keyWords) == 0 {
			return nil, errors.New("key: no data after the keyword")
		}
		if hasValue && len(valWords) == 0 {
			return nil, errors.New("value: no data after the keyword")
		}
	} else {
		if args[0] == "value" {
			return nil, errors.New("value given before the key (want key DATA value DATA)")
		}
		if len(args) > 2 {
			return nil, fmt.Errorf("%d words given: without keywords, give one word for the key and one for the value; "+
				"bytes need the keywords (key 1 0 0 0 value hex 2a 00 00 00)", len(args))
		}
		keyWords = args[:1]
		if len(args) == 2 {
			valWords, hasValue = args[1:], true
		}
	}
	kv := &KeyValue{}
	var err error
	if kv.Key, err = parseData("key", spec.Key, int(spec.KeySize), keyWords); err != nil {
		return nil, err
	}
	if (spec.Type == Array || spec.Type == PerCPUArray) && len(kv.Key) == 4 {
		if idx := binary.LittleEndian.Uint32(kv.Key); idx >= spec.MaxEntries {
			return nil, &IndexError{Map: spec.Name, Index: idx, Entries: spec.MaxEntries}
		}
	}
	if hasValue {
		if kv.Value, err = parseData("value", spec.Value, int(spec.ValueSize), valWords); err != nil {
			return nil, err
		}
	}
	return kv, nil
}

// parseData reads the words of a key or value of size bytes.
func parseData(what string, t btf.Type, size int, words []string) ([]byte, error) {
	if size <= 0 {
		return nil, fmt.Errorf("%s: the map has no %ss", what, what)
	}
	if words[0] == "hex" {
		b, err := parseHexWords(words[1:])
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		return b, checkLen(what, b, size)
	}
	if len(words) > 1 && !strings.Contains(words[0], "=") {
		b := make([]byte, 0, len(words))
		for _, w := range words {
			n, err := parseUint(w)
			if err != nil || n > 0xff {
				return nil, fmt.Errorf("%s: byte %q: want 0..255, decimal or 0x hex (or the hex keyword: %s hex 01 00)", what, w, what)
			}
			b = append(b, byte(n))
		}
		return b, checkLen(what, b, size)
	}
	buf := make([]byte, size)
	if isVoid(t) {
		if len(words) > 1 || !fitsInt(size) {
			return nil, fmt.Errorf("%s: the map's %ss have %d bytes and no BTF type: give its bytes (%s hex 01 02 ...)", what, what, size, what)
		}
		if err := putIntWord(buf, words[0], size, 0, what, true); err != nil {
			return nil, err
		}
		return buf, nil
	}
	if tsize, err := btf.Sizeof(t); err != nil || tsize != size {
		return nil, fmt.Errorf("%s: its BTF type %s does not have the map's %d bytes; give its bytes (%s hex ...)", what, typeName(t), size, what)
	}
	u := btf.UnderlyingType(t)
	if isComposite(u) {
		if err := setFields(buf, u, what, words); err != nil {
			return nil, err
		}
		return buf, nil
	}
	if len(words) > 1 {
		return nil, fmt.Errorf("%s: %d words for a %s; give one, or its bytes", what, len(words), typeName(u))
	}
	if err := putTyped(buf, 0, 0, u, words[0], what); err != nil {
		return nil, err
	}
	return buf, nil
}

func checkLen(what string, b []byte, size int) error {
	if len(b) != size {
		return fmt.Errorf("%s: %d bytes given, the map's %ss have %d", what, len(b), what, size)
	}
	return nil
}

func parseHexWords(words []string) ([]byte, error) {
	if len(words) == 0 {
		return nil, errors.New("no bytes after hex")
	}
	var out []byte
	for _, w := range words {
		h := strings.TrimPrefix(strings.TrimPrefix(w, "0x"), "0X")
		if len(h) == 1 {
			h = "0" + h
		}
		b, err := hex.DecodeString(h)
		if err != nil || h == "" {
			return nil, fmt.Errorf("%q is not hex bytes", w)
		}
		out = append(out, b...)
	}
	return out, nil
}

func fitsInt(size int) bool { return size == 1 || size == 2 || size == 4 || size == 8 }

func isComposite(t btf.Type) bool {
	switch t := t.(type) {
	case *btf.Struct, *btf.Union, *btf.Datasec:
		return true
	case *btf.Array:
		return !isCharArray(t)
	}
	return false
}

func isCharArray(a *btf.Array) bool {
	i, ok := btf.UnderlyingType(a.Type).(*btf.Int)
	return ok && i.Size == 1 && (i.Encoding&btf.Char != 0 || i.Name == "char")
}

// setFields applies FIELD=VALUE settings to buf, a value of composite type t.
func setFields(buf []byte, t btf.Type, what string, words []string) error {
	var sets []string
	for _, w := range words {
		sets = append(sets, strings.Split(w, ",")...)
	}
	for _, s := range sets {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		path, val, ok := strings.Cut(s, "=")
		if !ok {
			return fmt.Errorf("%s: %q: the %s is %s: give FIELD=VALUE settings (%s), or its bytes (%s hex ...)",
				what, s, what, describeType(t), exampleSettings(t), what)
		}
		f, err := resolvePath(t, strings.TrimSpace(path))
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		place := "field " + f.name
		if what == "key" {
			place = "key field " + f.name
		}
		if err := putTyped(buf, f.bitOff, f.bits, f.typ, strings.TrimSpace(val), place); err != nil {
			return err
		}
	}
	return nil
}

func describeType(t btf.Type) string {
	switch t := t.(type) {
	case *btf.Struct:
		return "struct " + t.Name
	case *btf.Union:
		return "union " + t.Name
	case *btf.Datasec:
		return "data section " + t.Name
	case *btf.Array:
		return fmt.Sprintf("an array of %d", t.Nelems)
	}
	return typeName(t)
}

func exampleSettings(t btf.Type) string {
	var names []string
	switch t := t.(type) {
	case *btf.Struct:
		for _, m := range t.Members {
			names = append(names, m.Name+"=...")
		}
	case *btf.Union:
		for _, m := range t.Members {
			names = append(names, m.Name+"=...")
		}
	case *btf.Datasec:
		for _, v := range t.Vars {
			if bv, ok := v.Type.(*btf.Var); ok {
				names = append(names, bv.Name+"=...")
			}
		}
	case *btf.Array:
		names = append(names, "[0]=...")
	}
	if len(names) > 4 {
		names = append(names[:4], "...")
	}
	return strings.Join(names, ",")
}

// leaf is the place a FIELD path names.
type leaf struct {
	name   string
	typ    btf.Type // underlying
	bitOff uint32
	bits   uint32 // bitfield size, 0 for a whole field
}

// resolvePath follows a path (a.b, hist[2], [3]) from composite type t.
func resolvePath(t btf.Type, path string) (leaf, error) {
	if path == "" {
		return leaf{}, errors.New("a setting with no field name (want FIELD=VALUE)")
	}
	cur := leaf{name: "", typ: t}
	rest := path
	for rest != "" {
		var step string
		switch {
		case rest[0] == '[':
			end := strings.IndexByte(rest, ']')
			if end < 0 {
				return leaf{}, fmt.Errorf("field %s: missing ]", path)
			}
			step, rest = rest[:end+1], rest[end+1:]
			a, ok := cur.typ.(*btf.Array)
			if !ok {
				return leaf{}, fmt.Errorf("field %s: %s is not an array", path, nameOr(cur.name, "the value"))
			}
			idx, err := strconv.ParseUint(step[1:len(step)-1], 10, 32)
			if err != nil {
				return leaf{}, fmt.Errorf("field %s: index %s is not a decimal number", path, step)
			}
			if idx >= uint64(a.Nelems) {
				return leaf{}, fmt.Errorf("field %s: index %d out of range: %s has %d elements", path, idx, nameOr(cur.name, "the value"), a.Nelems)
			}
			esize, err := btf.Sizeof(a.Type)
			if err != nil {
				return leaf{}, fmt.Errorf("field %s: %w", path, err)
			}
			cur = leaf{name: cur.name + step, typ: btf.UnderlyingType(a.Type), bitOff: cur.bitOff + uint32(idx)*uint32(esize)*8}
		default:
			rest = strings.TrimPrefix(rest, ".")
			end := strings.IndexAny(rest, ".[")
			if end < 0 {
				end = len(rest)
			}
			step, rest = rest[:end], rest[end:]
			next, err := member(cur.typ, step)
			if err != nil {
				return leaf{}, fmt.Errorf("field %s: %w", path, err)
			}
			next.name = strings.TrimPrefix(cur.name+"."+step, ".")
			next.bitOff += cur.bitOff
			cur = next
		}
	}
	return cur, nil
}

func nameOr(name, alt string) string {
	if name == "" {
		return alt
	}
	return name
}

// member finds the named member (or data section variable) of t.
func member(t btf.Type, name string) (leaf, error) {
	var members []btf.Member
	switch t := t.(type) {
	case *btf.Struct:
		members = t.Members
	case *btf.Union:
		members = t.Members
	case *btf.Datasec:
		var names []string
		for _, v := range t.Vars {
			bv, ok := v.Type.(*btf.Var)
			if !ok {
				continue
			}
			if bv.Name == name {
				return leaf{typ: btf.UnderlyingType(bv.Type), bitOff: v.Offset * 8}, nil
			}
			names = append(names, bv.Name)
		}
		return leaf{}, fmt.Errorf("no variable %q in %s (variables: %s)", name, t.Name, strings.Join(names, ", "))
	default:
		return leaf{}, fmt.Errorf("%q: %s has no fields", name, typeName(t))
	}
	var names []string
	for _, m := range members {
		if m.Name == name {
			return leaf{typ: btf.UnderlyingType(m.Type), bitOff: uint32(m.Offset), bits: uint32(m.BitfieldSize)}, nil
		}
		names = append(names, m.Name)
	}
	return leaf{}, fmt.Errorf("no field %q in %s (fields: %s)", name, describeType(t), strings.Join(names, ", "))
}

// putTyped writes word, a value of type t (underlying), at bit offset off
// of buf (bits > 0: a bitfield of that many bits). what names the place
// in errors ("key", "value", "field x").
func putTyped(buf []byte, off, bits uint32, t btf.Type, word, what string) error {
	end := uint64(off) + uint64(bits)
	if bits == 0 {
		sz, err := btf.Sizeof(t)
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		end += uint64(sz) * 8
	}
	if end > uint64(len(buf))*8 || bits > 64 {
		return fmt.Errorf("%s lies past the %d bytes of its BTF type", what, len(buf))
	}
	if bits > 0 {
		signed := false
		if i, ok := t.(*btf.Int); ok {
			signed = i.Encoding&btf.Signed != 0
		}
		u, err := parseIntRange(word, int(bits), signed, false, what, fmt.Sprintf("%d-bit", bits))
		if err != nil {
			return err
		}
		for i := uint32(0); i < bits; i++ {
			bit := off + i
			if u>>i&1 != 0 {
				buf[bit/8] |= 1 << (bit % 8)
			} else {
				buf[bit/8] &^= 1 << (bit % 8)
			}
		}
		return nil
	}
	if off%8 != 0 {
		return fmt.Errorf("%s is not byte-aligned", what)
	}
	at := buf[off/8:]
	switch t := t.(type) {
	case *btf.Int:
		size := int(t.Size)
		if t.Encoding&btf.Bool != 0 {
			switch word {
			case "true", "1":
				at[0] = 1
			case "false", "0":
				at[0] = 0
			default:
				return fmt.Errorf("%s %q: want true or false", what, word)
			}
			return nil
		}
		if !fitsInt(size) {
			return fmt.Errorf("%s: %d-byte integers are set as bytes (hex ...)", what, size)
		}
		u, err := parseIntRange(word, size*8, t.Encoding&btf.Signed != 0, false, what, fmt.Sprintf("%d-byte", size))
		if err != nil {
			return err
		}
		putLE(at, u, size)
		return nil
	case *btf.Enum:
		for _, ev := range t.Values {
			if ev.Name == word {
				putLE(at, ev.Value, int(t.Size))
				return nil
			}
		}
		u, err := parseIntRange(word, int(t.Size)*8, t.Signed, false, what, fmt.Sprintf("%d-byte", t.Size))
		if err != nil {
			var names []string
			for _, ev := range t.Values {
				names = append(names, ev.Name)
			}
			return fmt.Errorf("%w; or a name of enum %s: %s", err, t.Name, strings.Join(names, ", "))
		}
		putLE(at, u, int(t.Size))
		return nil
	case *btf.Float:
		f, err := strconv.ParseFloat(word, int(t.Size)*8)
		if err != nil {
			return fmt.Errorf("%s %q: not a number", what, word)
		}
		switch t.Size {
		case 4:
			binary.LittleEndian.PutUint32(at, math.Float32bits(float32(f)))
		case 8:
			binary.LittleEndian.PutUint64(at, math.Float64bits(f))
		default:
			return fmt.Errorf("%s: %d-byte floats are set as bytes (hex ...)", what, t.Size)
		}
		return nil
	case *btf.Array:
		if isCharArray(t) {
			if len(word) > int(t.Nelems) {
				return fmt.Errorf("%s: text %q has %d bytes, the array holds %d", what, word, len(word), t.Nelems)
			}
			clear(at[:t.Nelems])
			copy(at, word)
			return nil
		}
	case *btf.Pointer:
		return fmt.Errorf("%s is a pointer: it cannot be set", what)
	}
	return fmt.Errorf("%s is %s: set its members (%s)", what, describeType(t), exampleSettings(t))
}

func putLE(b []byte, u uint64, size int) {
	for i := 0; i < size; i++ {
		b[i] = byte(u >> (8 * i))
	}
}

// putIntWord writes an integer of a value without BTF type.
func putIntWord(buf []byte, word string, size int, off int, what string, either bool) error {
	u, err := parseIntRange(word, size*8, false, either, what, fmt.Sprintf("%d-byte", size))
	if err != nil {
		return err
	}
	putLE(buf[off:], u, size)
	return nil
}

// parseIntRange reads an integer word (decimal, or hex with 0x; a leading
// - for negatives) and checks that it fits bits bits (1 to 64): signed,
// unsigned or, when either, both ranges. It returns the two's-complement
// bits.
func parseIntRange(word string, bits int, signed, either bool, what, width string) (uint64, error) {
	neg, mag, ok, fits64 := parseWord(word)
	if !ok {
		return 0, fmt.Errorf("%s %q is not an integer (decimal, or hex with 0x; bytes: hex 01 00 ...)", what, word)
	}
	mask := ^uint64(0) >> (64 - bits)
	hi, loMag := mask, uint64(0) // the range is -loMag..hi
	kind := "unsigned "
	switch {
	case either:
		loMag = 1 << (bits - 1)
		kind = ""
	case signed:
		loMag = 1 << (bits - 1)
		hi = loMag - 1
		kind = "signed "
	}
	if !fits64 || (neg && mag > loMag) || (!neg && mag > hi) {
		lo := "0"
		if loMag > 0 {
			lo = "-" + strconv.FormatUint(loMag, 10)
		}
		return 0, fmt.Errorf("value %s does not fit the %s %s (%s%s..%d)", word, width, what, kind, lo, hi)
	}
	if neg {
		return -mag & mask, nil
	}
	return mag, nil
}

// parseWord reads [-]decimal or [-]0x hex, nothing else (no octal, no
// guessing from the digits): its sign and magnitude, whether it is an
// integer at all, and whether its magnitude fits 64 bits.
func parseWord(word string) (neg bool, mag uint64, ok, fits64 bool) {
	neg = strings.HasPrefix(word, "-")
	s := strings.TrimPrefix(word, "-")
	base := 10
	if strings.HasPrefix(s, "0x") || strings.HasPrefix(s, "0X") {
		s, base = s[2:], 16
	}
	if s == "" || strings.HasPrefix(s, "+") || strings.HasPrefix(s, "-") || strings.Contains(s, "_") {
		return neg, 0, false, false
	}
	mag, err := strconv.ParseUint(s, base, 64)
	if err != nil {
		if errors.Is(err, strconv.ErrRange) {
			return neg, 0, true, false
		}
		return neg, 0, false, false
	}
	return neg, mag, true, true
}

func parseUint(word string) (uint64, error) {
	neg, mag, ok, fits64 := parseWord(word)
	if !ok || !fits64 || (neg && mag != 0) {
		return 0, errors.New("not an unsigned integer")
	}
	return mag, nil
}

// IndexError is an array map key past the map's max_entries.
type IndexError struct {
	Map     string
	Index   uint32
	Entries uint32
}

func (e *IndexError) Error() string {
	return fmt.Sprintf("index %d out of range: array map %s has %d entries", e.Index, e.Map, e.Entries)
}

// Is matches E2BIG, what Linux answers for an array index past the end.
func (e *IndexError) Is(target error) bool { return target == syscall.E2BIG }
