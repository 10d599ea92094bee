package hook

import (
	"strings"
	"testing"
)

// Every registered context's array shapes must cover exactly the field's
// elements, and every element name must resolve back to itself.
func TestElemsRoundTrip(t *testing.T) {
	for _, h := range All() {
		c := &h.Context
		n := 0
		for i := range c.Fields {
			f := &c.Fields[i]
			prod := 1
			for _, d := range c.Dims(f) {
				prod *= d
			}
			if f.Array > 1 && prod != f.Array {
				t.Errorf("%s.%s: dims %v cover %d elements, field has %d", c.Name, f.Name, c.Dims(f), prod, f.Array)
			}
			n += max(f.Array, 1)
		}
		elems := c.Elems()
		if len(elems) != n {
			t.Errorf("%s: %d elems, want %d", c.Name, len(elems), n)
		}
		for _, e := range elems {
			got, err := c.Lookup(e.Name)
			if err != nil || got.Field != e.Field || got.Index != e.Index || got.Name != e.Name {
				t.Errorf("%s: Lookup(%q) = %+v, %v; want %+v", c.Name, e.Name, got, err, e)
			}
			if f, idx := c.FieldAt(e.Offset(), e.Field.Size); f != e.Field || idx != e.Index {
				t.Errorf("%s: %s at offset %d: FieldAt says %v[%d]", c.Name, e.Name, e.Offset(), f, idx)
			}
		}
	}
}

func TestLookup(t *testing.T) {
	c := &Get(Tuner).Context
	for name, want := range map[string]struct {
		off  int
		name string
	}{
		"n_bytes":    {16, "n_bytes"},
		"cost[0][0]": {64, "cost[0][0]"},
		"cost[1][2]": {64 + 4*5, "cost[1][2]"},
		"cost[5]":    {64 + 4*5, "cost[1][2]"},
		"cost[6][2]": {64 + 4*20, "cost[6][2]"},
		"algorithm":  {148, "algorithm"},
	} {
		e, err := c.Lookup(name)
		if err != nil || e.Offset() != want.off || e.Name != want.name {
			t.Errorf("Lookup(%q) = %s at %d, %v; want %s at %d", name, e.Name, e.Offset(), err, want.name, want.off)
		}
	}
	for name, want := range map[string]string{
		"n_byte":        `has no field "n_byte" (did you mean n_bytes?); fields: comm_id, call_seq, n_bytes,`,
		"nope":          "fields: comm_id,",
		"cost":          "cost is an array cost[7][3]: name one element, e.g. cost[0][0]",
		"cost[7][0]":    "index 7 out of range 0..6",
		"cost[0][3]":    "index 3 out of range 0..2",
		"cost[21]":      "index 21 out of range 0..20",
		"cost[1][2][3]": "has 2 dimensions, got 3 indexes",
		"cost[x]":       `index "x" is not a number`,
		"cost[1":        "missing ]",
		"n_bytes[0]":    "n_bytes is not an array",
	} {
		if _, err := c.Lookup(name); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Lookup(%q): error %v, want one containing %q", name, err, want)
		}
	}
	if l := c.FieldList(); !strings.Contains(l, "cost[7][3], algorithm (rw), protocol (rw), n_channels (rw)") {
		t.Errorf("FieldList = %q", l)
	}
}

func TestElemPutGet(t *testing.T) {
	c := &Get(Tuner).Context
	ctx := make([]byte, c.Size)
	algo, _ := c.Lookup("algorithm")
	if err := algo.Put(ctx, ^uint64(0)); err != nil { // -1
		t.Fatal(err)
	}
	if algo.Get(ctx) != 0xffffffff || algo.Signed(ctx) != -1 {
		t.Errorf("algorithm -1 reads back as %#x / %d", algo.Get(ctx), algo.Signed(ctx))
	}
	if err := algo.Put(ctx, 0xffffffff); err != nil || algo.Signed(ctx) != -1 {
		t.Errorf("algorithm 0xffffffff: %v", err)
	}
	for _, bad := range []uint64{1 << 32, uint64(1<<63) + 5, 0xffffffff00000000} {
		if err := algo.Put(ctx, bad); err == nil || !strings.Contains(err.Error(), "does not fit in 4 bytes") {
			t.Errorf("algorithm = %#x: error %v", bad, err)
		}
	}
	nb, _ := c.Lookup("n_bytes")
	if err := nb.Put(ctx, 1<<40); err != nil || nb.Get(ctx) != 1<<40 || ctx[16+5] != 1 {
		t.Errorf("n_bytes 1<<40: %v, reads %#x", err, nb.Get(ctx))
	}
}
