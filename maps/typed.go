package maps

import (
	"encoding/binary"
	"fmt"
)

// Typed is a view of a map with fixed-size Go key and value types, encoded
// with encoding/binary in native byte order. K and V must have exactly the
// map's key and value sizes: C structs with padding need explicit padding
// fields (e.g. `_ [4]byte`), since encoding/binary adds none.
type Typed[K, V any] struct {
	m *Map
}

// NewTyped returns a typed view of m, checking the sizes of K and V.
func NewTyped[K, V any](m *Map) (*Typed[K, V], error) {
	var k K
	var v V
	ks, vs := binary.Size(k), binary.Size(v)
	if ks < 0 || vs < 0 {
		return nil, fmt.Errorf("map %q: typed view: %T or %T has no fixed size", m.spec.Name, k, v)
	}
	if uint32(ks) != m.spec.KeySize || uint32(vs) != m.spec.ValueSize {
		return nil, fmt.Errorf("map %q: typed view: %T is %d bytes and %T %d bytes, the map has keys of %d and values of %d",
			m.spec.Name, k, ks, v, vs, m.spec.KeySize, m.spec.ValueSize)
	}
	return &Typed[K, V]{m: m}, nil
}

// Map returns the underlying map.
func (t *Typed[K, V]) Map() *Map { return t.m }

func (t *Typed[K, V]) key(k K) ([]byte, error) {
	b, err := binary.Append(nil, binary.NativeEndian, k)
	if err != nil {
		return nil, fmt.Errorf("map %q: encode key: %w", t.m.spec.Name, err)
	}
	return b, nil
}

// Lookup returns the value stored under k (not for PerCPUArray maps: see
// LookupPerCPU).
func (t *Typed[K, V]) Lookup(k K) (V, error) {
	var v V
	if t.m.spec.Type == PerCPUArray {
		return v, fmt.Errorf("map %q: typed lookup: per-CPU map, use LookupPerCPU: %w", t.m.spec.Name, ErrNotSupported)
	}
	kb, err := t.key(k)
	if err != nil {
		return v, err
	}
	b, err := t.m.Lookup(kb)
	if err != nil {
		return v, err
	}
	if _, err := binary.Decode(b, binary.NativeEndian, &v); err != nil {
		return v, fmt.Errorf("map %q: decode value: %w", t.m.spec.Name, err)
	}
	return v, nil
}

// LookupPerCPU returns every slot's value of k in a PerCPUArray map.
func (t *Typed[K, V]) LookupPerCPU(k K) ([]V, error) {
	if t.m.spec.Type != PerCPUArray {
		return nil, fmt.Errorf("map %q: LookupPerCPU: %w (%s)", t.m.spec.Name, ErrNotSupported, t.m.spec.Type)
	}
	kb, err := t.key(k)
	if err != nil {
		return nil, err
	}
	b, err := t.m.Lookup(kb)
	if err != nil {
		return nil, err
	}
	stride := int((t.m.spec.ValueSize + 7) &^ 7)
	out := make([]V, PerCPUSlots)
	for s := range out {
		if _, err := binary.Decode(b[s*stride:], binary.NativeEndian, &out[s]); err != nil {
			return nil, fmt.Errorf("map %q: decode slot %d: %w", t.m.spec.Name, s, err)
		}
	}
	return out, nil
}

// Update stores v under k (in every slot of a PerCPUArray map).
func (t *Typed[K, V]) Update(k K, v V, flags UpdateFlags) error {
	kb, err := t.key(k)
	if err != nil {
		return err
	}
	vb, err := binary.Append(nil, binary.NativeEndian, v)
	if err != nil {
		return fmt.Errorf("map %q: encode value: %w", t.m.spec.Name, err)
	}
	return t.m.Update(kb, vb, flags)
}

// Delete removes k.
func (t *Typed[K, V]) Delete(k K) error {
	kb, err := t.key(k)
	if err != nil {
		return err
	}
	return t.m.Delete(kb)
}

// Iterate calls fn with every entry until fn returns false (not for
// PerCPUArray maps).
func (t *Typed[K, V]) Iterate(fn func(K, V) bool) error {
	if t.m.spec.Type == PerCPUArray {
		return fmt.Errorf("map %q: typed iterate: %w (per-CPU map)", t.m.spec.Name, ErrNotSupported)
	}
	var derr error
	err := t.m.Iterate(func(kb, vb []byte) bool {
		var k K
		var v V
		if _, derr = binary.Decode(kb, binary.NativeEndian, &k); derr != nil {
			return false
		}
		if _, derr = binary.Decode(vb, binary.NativeEndian, &v); derr != nil {
			return false
		}
		return fn(k, v)
	})
	if err == nil && derr != nil {
		err = fmt.Errorf("map %q: decode entry: %w", t.m.spec.Name, derr)
	}
	return err
}
