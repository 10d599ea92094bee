package hook

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
)

// This file names the elements of a context so that tools can build and
// print one from text: "n_bytes", "cost[1][2]" (or "cost[5]"), as the C
// declaration in include/ncclbpf.h spells them.

// Elem is one element of a context: a scalar field, or one element of an
// array field.
type Elem struct {
	Field *Field
	// Index is the element's index in the flattened array (0 for scalars).
	Index int
	// Name is the element as C spells it: "n_bytes", "cost[1][2]".
	Name string
}

// Offset is the element's byte offset in the context.
func (e Elem) Offset() int { return e.Field.Offset + e.Index*e.Field.Size }

// Get reads the element from ctx (little-endian), zero-extended. ctx must
// be at least as long as the context.
func (e Elem) Get(ctx []byte) uint64 {
	b := ctx[e.Offset() : e.Offset()+e.Field.Size]
	switch e.Field.Size {
	case 1:
		return uint64(b[0])
	case 2:
		return uint64(binary.LittleEndian.Uint16(b))
	case 4:
		return uint64(binary.LittleEndian.Uint32(b))
	default:
		return binary.LittleEndian.Uint64(b)
	}
}

// Signed reads the element from ctx sign-extended from its width.
func (e Elem) Signed(ctx []byte) int64 {
	shift := 64 - 8*uint(e.Field.Size)
	return int64(e.Get(ctx)<<shift) >> shift
}

// Put writes v (two's complement for negative values) into ctx, or
// returns an error when it fits the element's width neither as a signed nor
// as an unsigned integer.
func (e Elem) Put(ctx []byte, v uint64) error {
	size := e.Field.Size
	if size < 8 {
		bits := uint(8 * size)
		if s := int64(v); v >= 1<<bits && (s >= 0 || s < -(1<<(bits-1))) {
			return fmt.Errorf("%s: value %d does not fit in %d bytes (%d..%d, or %d..%d unsigned)",
				e.Name, s, size, -(int64(1) << (bits - 1)), int64(1)<<(bits-1)-1, 0, uint64(1)<<bits-1)
		}
	}
	b := ctx[e.Offset() : e.Offset()+size]
	switch size {
	case 1:
		b[0] = byte(v)
	case 2:
		binary.LittleEndian.PutUint16(b, uint16(v))
	case 4:
		binary.LittleEndian.PutUint32(b, uint32(v))
	default:
		binary.LittleEndian.PutUint64(b, v)
	}
	return nil
}

// Dims returns the C dimensions of field f of c: nil for a scalar,
// [Array] for a one-dimensional array, [7 3] for the tuner's cost table.
func (c *Context) Dims(f *Field) []int {
	if f.Array <= 1 {
		return nil
	}
	if d, ok := ctxArrayDims[c.Name+"."+f.Name]; ok {
		return d
	}
	return []int{f.Array}
}

// Field returns the field called name, or nil.
func (c *Context) Field(name string) *Field {
	for i := range c.Fields {
		if c.Fields[i].Name == name {
			return &c.Fields[i]
		}
	}
	return nil
}

// Elems lists every element of c in offset order, array elements by
// their C names ("cost[0][0]", "cost[0][1]", ...).
func (c *Context) Elems() []Elem {
	var out []Elem
	for i := range c.Fields {
		f := &c.Fields[i]
		n := max(f.Array, 1)
		for j := 0; j < n; j++ {
			out = append(out, Elem{Field: f, Index: j, Name: c.elemName(f, j)})
		}
	}
	return out
}

func (c *Context) elemName(f *Field, index int) string {
	dims := c.Dims(f)
	if dims == nil {
		return f.Name
	}
	idx := make([]int, len(dims))
	for k := len(dims) - 1; k >= 0; k-- {
		idx[k] = index % dims[k]
		index /= dims[k]
	}
	var b strings.Builder
	b.WriteString(f.Name)
	for _, i := range idx {
		fmt.Fprintf(&b, "[%d]", i)
	}
	return b.String()
}

// FieldList describes the fields of c for error and help messages:
// "comm_id, call_seq, ..., cost[7][3], algorithm (rw), ...".
func (c *Context) FieldList() string {
	parts := make([]string, 0, len(c.Fields))
	for i := range c.Fields {
		f := &c.Fields[i]
		s := f.Name
		for _, d := range c.Dims(f) {
			s += fmt.Sprintf("[%d]", d)
		}
		if f.Access&Write != 0 {
			s += " (rw)"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ", ")
}

// Lookup resolves an element name: "n_bytes", "cost[1][2]" or, for a
// multi-dimensional array, the flat index "cost[5]". An array field named
// without an index is an error. The error lists the fields of c and, for a
// misspelling, the nearest name.
func (c *Context) Lookup(name string) (Elem, error) {
	base, rest, _ := strings.Cut(strings.TrimSpace(name), "[")
	f := c.Field(base)
	if f == nil {
		hint := ""
		if near := c.nearest(base); near != "" {
			hint = fmt.Sprintf(" (did you mean %s?)", near)
		}
		return Elem{}, fmt.Errorf("%s has no field %q%s; fields: %s", c.Name, base, hint, c.FieldList())
	}
	dims := c.Dims(f)
	if rest == "" && !strings.Contains(name, "[") {
		if dims != nil {
			shape := ""
			for _, d := range dims {
				shape += fmt.Sprintf("[%d]", d)
			}
			return Elem{}, fmt.Errorf("%s is an array %s%s: name one element, e.g. %s", f.Name, f.Name, shape,
				c.elemName(f, 0))
		}
		return Elem{Field: f, Name: f.Name}, nil
	}
	if dims == nil {
		return Elem{}, fmt.Errorf("%q: %s is not an array", name, f.Name)
	}
	var idx []int
	for s := "[" + rest; s != ""; {
		if !strings.HasPrefix(s, "[") {
			return Elem{}, fmt.Errorf("%q: want %s[i]%s", name, f.Name, strings.Repeat("[j]", len(dims)-1))
		}
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return Elem{}, fmt.Errorf("%q: missing ]", name)
		}
		i, err := strconv.Atoi(strings.TrimSpace(s[1:end]))
		if err != nil {
			return Elem{}, fmt.Errorf("%q: index %q is not a number", name, s[1:end])
		}
		idx = append(idx, i)
		s = s[end+1:]
	}
	flat := 0
	switch len(idx) {
	case 1:
		flat = idx[0]
		if flat < 0 || flat >= f.Array {
			return Elem{}, fmt.Errorf("%q: index %d out of range 0..%d", name, flat, f.Array-1)
		}
	case len(dims):
		for k, i := range idx {
			if i < 0 || i >= dims[k] {
				return Elem{}, fmt.Errorf("%q: index %d out of range 0..%d", name, i, dims[k]-1)
			}
			flat = flat*dims[k] + i
		}
	default:
		return Elem{}, fmt.Errorf("%q: %s has %d dimensions, got %d indexes", name, f.Name, len(dims), len(idx))
	}
	return Elem{Field: f, Index: flat, Name: c.elemName(f, flat)}, nil
}

// nearest returns the field name closest to s by edit distance, if it is
// close enough to be a likely misspelling.
func (c *Context) nearest(s string) string {
	best, bestD := "", 1<<30
	for _, f := range c.Fields {
		if d := editDistance(s, f.Name); d < bestD {
			best, bestD = f.Name, d
		}
	}
	if bestD > max(2, len(s)/3) {
		return ""
	}
	return best
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
