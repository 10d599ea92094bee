package control

import (
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"os"
	"sort"
	"strconv"
	"strings"
)

// The agreement of `ncclbpf agree`: the values of a rank-local map, read
// from every rank, reduced element by element into one value per key that
// every rank then gets in its agreed map at the same call.
//
// A value is a sequence of integer elements of one type (u32, u64, i32,
// i64, little-endian); a reduction spec gives one operation per element:
// "mean" (all elements), or "min:12,mean:12" (12 elements each, in order).
// Operations: sum, mean (rounded toward zero), min, max. Each key is
// reduced over the ranks that have it. A sum or mean is exact (no
// overflow in between); a sum that does not fit the element type is an
// error, not a wrapped value.

// ReduceOp is one element's reduction.
type ReduceOp int

// Reductions.
const (
	OpSum ReduceOp = iota
	OpMean
	OpMin
	OpMax
)

var reduceNames = map[string]ReduceOp{"sum": OpSum, "mean": OpMean, "min": OpMin, "max": OpMax}

func (o ReduceOp) String() string {
	for n, v := range reduceNames {
		if v == o {
			return n
		}
	}
	return "op" + strconv.Itoa(int(o))
}

// ReduceSpec is a parsed reduction: the element type and one operation per
// element of the value.
type ReduceSpec struct {
	Text   string // as given
	Elem   string // u32, u64, i32, i64
	Width  int    // bytes per element
	Signed bool
	Ops    []ReduceOp
}

// ParseReduce reads a reduction spec for values of valueSize bytes made of
// elem elements.
func ParseReduce(spec, elem string, valueSize uint32) (ReduceSpec, error) {
	r := ReduceSpec{Text: spec, Elem: elem}
	switch elem {
	case "u32":
		r.Width = 4
	case "u64":
		r.Width = 8
	case "i32":
		r.Width, r.Signed = 4, true
	case "i64":
		r.Width, r.Signed = 8, true
	default:
		return r, fmt.Errorf("element type %q: want u32, u64, i32 or i64", elem)
	}
	if valueSize == 0 || int(valueSize)%r.Width != 0 {
		return r, fmt.Errorf("value of %d bytes is not a whole number of %s elements", valueSize, elem)
	}
	n := int(valueSize) / r.Width
	parts := strings.Split(spec, ",")
	if len(parts) == 1 && !strings.Contains(spec, ":") {
		op, ok := reduceNames[strings.TrimSpace(spec)]
		if !ok {
			return r, fmt.Errorf("reduce %q: unknown operation (want sum, mean, min or max, or OP:COUNT,...)", spec)
		}
		for i := 0; i < n; i++ {
			r.Ops = append(r.Ops, op)
		}
		return r, nil
	}
	for _, p := range parts {
		name, cnt, ok := strings.Cut(strings.TrimSpace(p), ":")
		op, known := reduceNames[name]
		k, err := strconv.Atoi(cnt)
		if !ok || !known || err != nil || k <= 0 {
			return r, fmt.Errorf("reduce %q: part %q: want OP:COUNT with OP sum, mean, min or max", spec, p)
		}
		for i := 0; i < k; i++ {
			r.Ops = append(r.Ops, op)
		}
	}
	if len(r.Ops) != n {
		return r, fmt.Errorf("reduce %q covers %d elements; the value has %d %s elements (%d bytes)", spec, len(r.Ops), n, elem, valueSize)
	}
	return r, nil
}

// Partial is a reduction in progress (or finished, before the division of
// means): per key, how many ranks contributed and, per element, the sum
// (sum, mean) or the extreme (min, max) so far, in decimal. Partials of
// several nodes combine exactly (Combine).
type Partial struct {
	Format    string         `json:"format"`
	Map       string         `json:"map"`
	KeySize   uint32         `json:"key_size"`
	ValueSize uint32         `json:"value_size"`
	Elem      string         `json:"elem"`
	Reduce    string         `json:"reduce"`
	Entries   []PartialEntry `json:"entries"`

	spec  ReduceSpec
	index map[string]int
}

// PartialEntry is one key of a Partial.
type PartialEntry struct {
	Key   string   `json:"key"`
	Ranks int      `json:"ranks"`
	Acc   []string `json:"acc"`
}

// PartialFormat names the file format of exported partials.
const PartialFormat = "ncclbpf-agree/1"

// NewPartial starts a reduction of map m (keySize, valueSize) with spec.
func NewPartial(m string, keySize, valueSize uint32, spec ReduceSpec) *Partial {
	return &Partial{Format: PartialFormat, Map: m, KeySize: keySize, ValueSize: valueSize, Elem: spec.Elem,
		Reduce: spec.Text, spec: spec, index: map[string]int{}}
}

func (p *Partial) elems(v []byte) []*big.Int {
	w := p.spec.Width
	out := make([]*big.Int, len(v)/w)
	for i := range out {
		b := v[i*w : (i+1)*w]
		var x big.Int
		switch {
		case w == 4 && p.spec.Signed:
			x.SetInt64(int64(int32(binary.LittleEndian.Uint32(b))))
		case w == 4:
			x.SetUint64(uint64(binary.LittleEndian.Uint32(b)))
		case p.spec.Signed:
			x.SetInt64(int64(binary.LittleEndian.Uint64(b)))
		default:
			x.SetUint64(binary.LittleEndian.Uint64(b))
		}
		out[i] = &x
	}
	return out
}

// merge folds one contribution (ranks ranks, accumulated values acc) into key.
func (p *Partial) merge(key string, ranks int, acc []*big.Int) {
	i, ok := p.index[key]
	if !ok {
		e := PartialEntry{Key: key, Ranks: ranks, Acc: make([]string, len(acc))}
		for j, a := range acc {
			e.Acc[j] = a.String()
		}
		p.index[key] = len(p.Entries)
		p.Entries = append(p.Entries, e)
		return
	}
	e := &p.Entries[i]
	e.Ranks += ranks
	for j, a := range acc {
		cur, _ := new(big.Int).SetString(e.Acc[j], 10)
		switch p.spec.Ops[j] {
		case OpSum, OpMean:
			cur.Add(cur, a)
		case OpMin:
			if a.Cmp(cur) < 0 {
				cur.Set(a)
			}
		case OpMax:
			if a.Cmp(cur) > 0 {
				cur.Set(a)
			}
		}
		e.Acc[j] = cur.String()
	}
}

// Add folds one rank's map contents (raw entries, hex) into p.
func (p *Partial) Add(entries []KV) error {
	for _, kv := range entries {
		k, err := hex.DecodeString(kv.Key)
		if err != nil || len(k) != int(p.KeySize) {
			return fmt.Errorf("map %s: key %q: want %d bytes", p.Map, kv.Key, p.KeySize)
		}
		v, err := hex.DecodeString(kv.Value)
		if err != nil || len(v) != int(p.ValueSize) {
			return fmt.Errorf("map %s: value %q: want %d bytes", p.Map, kv.Value, p.ValueSize)
		}
		p.merge(kv.Key, 1, p.elems(v))
	}
	return nil
}

// Combine folds another partial of the same map and reduction into p.
func (p *Partial) Combine(o *Partial) error {
	if o.Map != p.Map || o.KeySize != p.KeySize || o.ValueSize != p.ValueSize || o.Elem != p.Elem || o.Reduce != p.Reduce {
		return fmt.Errorf("cannot combine: map %s (%d/%d bytes, %s, reduce %s) with map %s (%d/%d bytes, %s, reduce %s)",
			p.Map, p.KeySize, p.ValueSize, p.Elem, p.Reduce, o.Map, o.KeySize, o.ValueSize, o.Elem, o.Reduce)
	}
	for _, e := range o.Entries {
		acc := make([]*big.Int, len(e.Acc))
		for j, s := range e.Acc {
			x, ok := new(big.Int).SetString(s, 10)
			if !ok {
				return fmt.Errorf("key %s: element %d: %q is not an integer", e.Key, j, s)
			}
			acc[j] = x
		}
		if len(acc) != len(p.spec.Ops) || e.Ranks <= 0 {
			return fmt.Errorf("key %s: %d elements and %d ranks; want %d elements and at least one rank", e.Key, len(acc), e.Ranks, len(p.spec.Ops))
		}
		p.merge(e.Key, e.Ranks, acc)
	}
	return nil
}

// Result finishes the reduction: one value per key (keys in hex order).
func (p *Partial) Result() ([]KV, error) {
	w := p.spec.Width
	lo, hi := new(big.Int), new(big.Int)
	if p.spec.Signed {
		hi.Lsh(big.NewInt(1), uint(8*w-1))
		lo.Neg(hi)
		hi.Sub(hi, big.NewInt(1))
	} else {
		hi.Lsh(big.NewInt(1), uint(8*w))
		hi.Sub(hi, big.NewInt(1))
	}
	out := make([]KV, 0, len(p.Entries))
	for _, e := range p.Entries {
		v := make([]byte, p.ValueSize)
		for j, s := range e.Acc {
			x, _ := new(big.Int).SetString(s, 10)
			if p.spec.Ops[j] == OpMean {
				x.Quo(x, big.NewInt(int64(e.Ranks)))
			}
			if x.Cmp(lo) < 0 || x.Cmp(hi) > 0 {
				return nil, fmt.Errorf("key %s: element %d: %s %s does not fit %s", e.Key, j, p.spec.Ops[j], x, p.Elem)
			}
			b := v[j*w : (j+1)*w]
			if w == 4 {
				binary.LittleEndian.PutUint32(b, uint32(x.Int64()))
			} else if p.spec.Signed {
				binary.LittleEndian.PutUint64(b, uint64(x.Int64()))
			} else {
				binary.LittleEndian.PutUint64(b, x.Uint64())
			}
		}
		out = append(out, KV{Key: e.Key, Value: hex.EncodeToString(v)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

// WriteFile saves p (JSON) at path, through a temporary file renamed into place.
func (p *Partial) WriteFile(path string) error {
	b, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// ReadPartial loads a partial saved by WriteFile.
func ReadPartial(path string) (*Partial, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var p Partial
	if err := json.Unmarshal(b, &p); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if p.Format != PartialFormat {
		return nil, fmt.Errorf("%s: format %q, want %q (a file written by ncclbpf agree --export)", path, p.Format, PartialFormat)
	}
	spec, err := ParseReduce(p.Reduce, p.Elem, p.ValueSize)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	q := NewPartial(p.Map, p.KeySize, p.ValueSize, spec)
	if err := q.Combine(&p); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return q, nil
}

// ErrNoEntries says that no rank had anything in the measurement map.
var ErrNoEntries = errors.New("no entries to agree on: the measurement map is empty on every rank")
