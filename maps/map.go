package maps

// #cgo CFLAGS: -std=gnu11 -O2 -Wall -Wextra -Wno-unused-parameter
// #include <errno.h>
// #include <stdlib.h>
// #include "ncclbpf_maps.h"
import "C"

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"

	"github.com/ncclbpf/ncclbpf/loader"
	"github.com/ncclbpf/ncclbpf/vm"
)

// Type is a map type, numbered like Linux's enum bpf_map_type: the
// loader's MapType.
type Type = loader.MapType

// Supported map types.
const (
	Hash        Type = C.NBPF_MAP_HASH
	Array       Type = C.NBPF_MAP_ARRAY
	PerCPUArray Type = C.NBPF_MAP_PERCPU_ARRAY
	LRUHash     Type = C.NBPF_MAP_LRU_HASH
	RingBuf     Type = C.NBPF_MAP_RINGBUF
)

// UpdateFlags select how Update treats existing keys.
type UpdateFlags uint64

// Update flags (Linux's BPF_ANY, BPF_NOEXIST, BPF_EXIST).
const (
	UpdateAny     UpdateFlags = C.NBPF_ANY     // create or replace
	UpdateNoExist UpdateFlags = C.NBPF_NOEXIST // create only
	UpdateExist   UpdateFlags = C.NBPF_EXIST   // replace only
)

// Map creation flags accepted in Spec.Flags (Linux values).
const (
	FlagNoPrealloc  = C.NBPF_F_NO_PREALLOC   // hash: accepted; elements are always preallocated
	FlagNoCommonLRU = C.NBPF_F_NO_COMMON_LRU // LRU: accepted; there is one common LRU
	FlagRdonly      = C.NBPF_F_RDONLY        // Go/C control plane may not write
	FlagWronly      = C.NBPF_F_WRONLY        // accepted, not enforced
	FlagZeroSeed    = C.NBPF_F_ZERO_SEED     // hash: deterministic hash seed
	FlagRdonlyProg  = C.NBPF_F_RDONLY_PROG   // programs may not write (.rodata)
	FlagWronlyProg  = C.NBPF_F_WRONLY_PROG   // accepted, not enforced
	FlagMmapable    = C.NBPF_F_MMAPABLE      // array: accepted; arrays are always contiguous
)

// PerCPUSlots is the number of value copies of a PerCPUArray map.
const PerCPUSlots = C.NBPF_PERCPU_SLOTS

// Errors, usable with errors.Is. Each also matches the errno Linux returns
// in the same situation (e.g. errors.Is(err, syscall.ENOENT)).
var (
	ErrKeyNotExist  = errors.New("key does not exist") // ENOENT
	ErrKeyExists    = errors.New("key already exists") // EEXIST
	ErrMapFull      = errors.New("map is full")        // E2BIG
	ErrBadFlags     = errors.New("invalid flags")      // EINVAL from an update
	ErrFrozen       = errors.New("map is read-only")   // EPERM
	ErrClosed       = errors.New("map is closed")      // use after Close
	ErrNotSupported = errors.New("operation not supported by this map type")
)

// errnoError pairs a sentinel with its errno so both match errors.Is.
type errnoError struct {
	sentinel error
	errno    syscall.Errno
}

func (e *errnoError) Error() string { return e.sentinel.Error() }

// Is matches both the sentinel and the errno.
func (e *errnoError) Is(target error) bool { return target == e.sentinel || target == e.errno }
func (e *errnoError) Unwrap() error        { return e.sentinel }

// KV is one initial entry of a map (Spec.Contents).
type KV = loader.MapKV

// Spec describes a map to create: the loader's MapSpec, the one
// description of a map that the loader fills, the verifier checks programs
// against and New creates. New stores its Contents and, when Freeze is
// set, freezes the map; Dump uses Key and Value to print field names.
type Spec = loader.MapSpec

// Map is a live native map.
type Map struct {
	mu     sync.RWMutex // write-locked by Close only
	spec   Spec
	c      *C.struct_nbpf_map
	ringMu sync.Mutex // one ring consumer at a time
	// programWritten: a program bound to the map may write it, so its
	// contents may hold rank-local data from then on
	programWritten atomic.Bool
}

// New creates the map described by spec, zero-filled, then stores
// spec.Contents and freezes it when spec.Freeze is set.
func New(spec Spec) (*Map, error) {
	var c *C.struct_nbpf_map
	rc := C.nbpf_map_create(C.uint32_t(spec.Type), C.uint32_t(spec.KeySize), C.uint32_t(spec.ValueSize),
		C.uint32_t(spec.MaxEntries), C.uint32_t(spec.Flags), &c)
	if rc != 0 {
		return nil, fmt.Errorf("map %q: create %s (key %d, value %d, max_entries %d, flags %#x): %w",
			spec.Name, spec.Type, spec.KeySize, spec.ValueSize, spec.MaxEntries, spec.Flags, createError(spec, rc))
	}
	spec.Contents = append([]KV(nil), spec.Contents...)
	m := &Map{spec: spec, c: c}
	for i, kv := range spec.Contents {
		if err := m.update(kv.Key, kv.Value, UpdateAny); err != nil {
			C.nbpf_map_free(c)
			return nil, fmt.Errorf("map %q: initial contents entry %d: %w", spec.Name, i, err)
		}
	}
	if spec.Freeze {
		C.nbpf_map_freeze(c)
	}
	return m, nil
}

// createError explains a failed nbpf_map_create.
func createError(spec Spec, rc C.int) error {
	errno := syscall.Errno(-rc)
	if errno != syscall.EINVAL {
		return errno
	}
	var why string
	switch spec.Type {
	case Array, PerCPUArray:
		why = "arrays need key size 4, a value size of 1..16 MiB and max_entries > 0"
	case Hash, LRUHash:
		why = "hash maps need a key size of 1..512, a value size of 1..16 MiB and 1..2^30 entries"
	case RingBuf:
		why = "ring buffers need key and value size 0 and a power-of-two, page-multiple max_entries"
	default:
		return fmt.Errorf("unsupported map type %d: %w", uint32(spec.Type), errno)
	}
	return fmt.Errorf("%s, and only the flags their type accepts: %w", why, errno)
}

// Spec returns the spec the map was created from (Contents as given).
func (m *Map) Spec() Spec { return m.spec }

// Name returns the map's name.
func (m *Map) Name() string { return m.spec.Name }

// Ref returns the map as the engines see it.
func (m *Map) Ref() vm.MapRef {
	m.mu.RLock()
	defer m.mu.RUnlock()
	r := vm.MapRef{
		Name:       m.spec.Name,
		Type:       uint32(m.spec.Type),
		KeySize:    m.spec.KeySize,
		ValueSize:  m.spec.ValueSize,
		MaxEntries: m.spec.MaxEntries,
		ReadOnly:   m.spec.Flags&FlagRdonlyProg != 0,
	}
	if m.c != nil {
		r.Handle = uintptr(unsafe.Pointer(m.c))
		r.ArrayBase = uintptr(C.nbpf_map_array_base(m.c))
		if r.ArrayBase != 0 {
			r.ArrayStride = uint32(C.nbpf_map_value_stride(m.c))
		}
		r.Frozen = C.nbpf_map_frozen(m.c) != 0
	}
	return r
}

// Handle returns the address of the native map object (what programs and C
// code receive), 0 after Close.
func (m *Map) Handle() uintptr {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return uintptr(unsafe.Pointer(m.c))
}

// ValueBufSize is the number of bytes Lookup returns and Update accepts:
// ValueSize, or for PerCPUArray PerCPUSlots values each rounded up to 8.
func (m *Map) ValueBufSize() int {
	if m.spec.Type == PerCPUArray {
		return PerCPUSlots * int((m.spec.ValueSize+7)&^7)
	}
	return int(m.spec.ValueSize)
}

// Freeze makes the map read-only for Go and C control-plane writes.
// Programs may still write unless the map has FlagRdonlyProg.
func (m *Map) Freeze() error {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.c == nil {
		return fmt.Errorf("map %q: freeze: %w", m.spec.Name, ErrClosed)
	}
	C.nbpf_map_freeze(m.c)
	return nil
}

// Frozen reports whether the map is frozen.
func (m *Map) Frozen() bool {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.c != nil && C.nbpf_map_frozen(m.c) != 0
}

// ReadOnlyForPrograms reports whether programs may not write the map
// (FlagRdonlyProg, as for .rodata).
func (m *Map) ReadOnlyForPrograms() bool { return m.spec.Flags&FlagRdonlyProg != 0 }

// MarkProgramWritten records that a program bound to the map may write it
// (the verifier found a store or an update into it). The mark is never
// cleared: what such a program wrote may be rank-local data (a
// measurement, a clock) and stays in the map, so a later bundle that
// decides on the map as rank-uniform data must not take it over.
func (m *Map) MarkProgramWritten() { m.programWritten.Store(true) }

// ProgramWritten reports whether MarkProgramWritten was called.
func (m *Map) ProgramWritten() bool { return m.programWritten.Load() }

func (m *Map) checkKey(op string, key []byte) error {
	if m.c == nil {
		return fmt.Errorf("map %q: %s: %w", m.spec.Name, op, ErrClosed)
	}
	if m.spec.Type == RingBuf {
		return fmt.Errorf("map %q: %s: %w (ringbuf)", m.spec.Name, op, ErrNotSupported)
	}
	if len(key) != int(m.spec.KeySize) {
		return fmt.Errorf("map %q: %s: key has %d bytes, the map's keys have %d", m.spec.Name, op, len(key), m.spec.KeySize)
	}
	return nil
}

// errnoFrom maps a negative errno from C to an error.
func errnoFrom(rc C.int) error {
	switch errno := syscall.Errno(-rc); errno {
	case syscall.ENOENT:
		return &errnoError{ErrKeyNotExist, errno}
	case syscall.EEXIST:
		return &errnoError{ErrKeyExists, errno}
	case syscall.E2BIG:
		return &errnoError{ErrMapFull, errno}
	case syscall.EPERM:
		return &errnoError{ErrFrozen, errno}
	default:
		return errno
	}
}

// Lookup returns a copy of the value stored under key (for PerCPUArray,
// all slots' values; see ValueBufSize).
func (m *Map) Lookup(key []byte) ([]byte, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if err := m.checkKey("lookup", key); err != nil {
		return nil, err
	}
	out := make([]byte, m.ValueBufSize())
	if rc := C.nbpf_map_lookup_copy(m.c, unsafe.Pointer(&key[0]), unsafe.Pointer(&out[0])); rc != 0 {
		return nil, fmt.Errorf("map %q: lookup key %x: %w", m.spec.Name, key, errnoFrom(rc))
	}
	return out, nil
}

// Update stores value under key. For PerCPUArray, value is either one
// value (stored in every slot) or ValueBufSize bytes (one per slot).
func (m *Map) Update(key, value []byte, flags UpdateFlags) error {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.update(key, value, flags)
}

func (m *Map) update(key, value []byte, flags UpdateFlags) error {
	if err := m.checkKey("update", key); err != nil {
		return err
	}
	if flags > UpdateExist {
		return fmt.Errorf("map %q: update key %x: flags %d: %w", m.spec.Name, key, flags, &errnoError{ErrBadFlags, syscall.EINVAL})
	}
	buf := value
	if m.spec.Type == PerCPUArray && len(value) == int(m.spec.ValueSize) {
		stride := int((m.spec.ValueSize + 7) &^ 7)
		buf = make([]byte, m.ValueBufSize())
		for s := 0; s < PerCPUSlots; s++ {
			copy(buf[s*stride:], value)
		}
	}
	if len(buf) != m.ValueBufSize() {
		return fmt.Errorf("map %q: update key %x: value has %d bytes, want %d", m.spec.Name, key, len(value), m.ValueBufSize())
	}
	if m.spec.Type == Array || m.spec.Type == PerCPUArray {
		if idx := binary.LittleEndian.Uint32(key); idx >= m.spec.MaxEntries {
			return &IndexError{Map: m.spec.Name, Index: idx, Entries: m.spec.MaxEntries}
		}
	}
	if rc := C.nbpf_map_update_all(m.c, unsafe.Pointer(&key[0]), unsafe.Pointer(&buf[0]), C.uint64_t(flags)); rc != 0 {
		err := errnoFrom(rc)
		if rc == -C.EINVAL {
			err = &errnoError{ErrBadFlags, syscall.EINVAL}
		}
		return fmt.Errorf("map %q: update key %x: %w", m.spec.Name, key, err)
	}
	return nil
}

// Delete removes key. Arrays cannot delete (ErrNotSupported, EINVAL).
func (m *Map) Delete(key []byte) error {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if err := m.checkKey("delete", key); err != nil {
		return err
	}
	if m.spec.Type == Array || m.spec.Type == PerCPUArray {
		return fmt.Errorf("map %q: delete key %x: %w (array entries always exist: update the entry to zero instead)",
			m.spec.Name, key, &errnoError{ErrNotSupported, syscall.EINVAL})
	}
	if rc := C.nbpf_map_delete(m.c, unsafe.Pointer(&key[0])); rc != 0 {
		return fmt.Errorf("map %q: delete key %x: %w", m.spec.Name, key, errnoFrom(rc))
	}
	return nil
}

// NextKey returns the key after key (the first key when key is nil), and
// false at the end. As in Linux, a key no longer in the map restarts the
// walk, and concurrent updates may make a walk skip or repeat keys.
func (m *Map) NextKey(key []byte) ([]byte, bool, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.c == nil {
		return nil, false, fmt.Errorf("map %q: next key: %w", m.spec.Name, ErrClosed)
	}
	if m.spec.Type == RingBuf {
		return nil, false, fmt.Errorf("map %q: next key: %w (ringbuf)", m.spec.Name, ErrNotSupported)
	}
	var kp unsafe.Pointer
	if key != nil {
		if err := m.checkKey("next key", key); err != nil {
			return nil, false, err
		}
		kp = unsafe.Pointer(&key[0])
	}
	next := make([]byte, m.spec.KeySize)
	switch rc := C.nbpf_map_next_key(m.c, kp, unsafe.Pointer(&next[0])); rc {
	case 0:
		return next, true, nil
	case -C.ENOENT:
		return nil, false, nil
	default:
		return nil, false, fmt.Errorf("map %q: next key: %w", m.spec.Name, errnoFrom(rc))
	}
}

// Keys returns the map's keys (a snapshot walk; see NextKey).
func (m *Map) Keys() ([][]byte, error) {
	var keys [][]byte
	var key []byte
	limit := int(m.spec.MaxEntries) * 2 // bounds a walk disturbed by concurrent updates
	for len(keys) < limit {
		next, ok, err := m.NextKey(key)
		if err != nil {
			return nil, err
		}
		if !ok {
			break
		}
		keys = append(keys, next)
		key = next
	}
	return keys, nil
}

// Iterate calls fn with every key and a copy of its value until fn returns
// false. Keys deleted during the walk are skipped.
func (m *Map) Iterate(fn func(key, value []byte) bool) error {
	keys, err := m.Keys()
	if err != nil {
		return err
	}
	for _, k := range keys {
		v, err := m.Lookup(k)
		if errors.Is(err, ErrKeyNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		if !fn(k, v) {
			return nil
		}
	}
	return nil
}

// setLocklessTries sets how many lockless walks a hash lookup tries before
// it walks the chain under the bucket's lock (64; 0: always locked), and
// returns the previous value (tests force the locked walk with it).
func setLocklessTries(n uint32) uint32 {
	old := uint32(C.nbpf_htab_get_lockless_tries())
	C.nbpf_htab_set_lockless_tries(C.uint32_t(n))
	return old
}

// bucketOf returns the bucket of key in a hash map, -1 for other types
// (tests aim collisions with it; see export_test.go).
func (m *Map) bucketOf(key []byte) int {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.checkKey("bucket", key) != nil {
		return -1
	}
	b := C.nbpf_map_bucket_of(m.c, unsafe.Pointer(&key[0]))
	if b < 0 {
		return -1
	}
	return int(b)
}

// Close releases the map's native memory. No program or C code may use
// the map afterwards; Go methods return ErrClosed. Closing twice is a no-op.
func (m *Map) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.c != nil {
		C.nbpf_map_free(m.c)
		m.c = nil
	}
	return nil
}

// Compatible reports whether a map created from s would have the same
// shape as m (type, key and value size, max entries, flags), so that a
// reloaded bundle may keep using m and its contents instead. The error
// says what differs.
func (m *Map) Compatible(s Spec) error {
	o := m.spec
	switch {
	case s.Type != o.Type:
		return fmt.Errorf("map %q: type %s, was %s", s.Name, s.Type, o.Type)
	case s.KeySize != o.KeySize || s.ValueSize != o.ValueSize:
		return fmt.Errorf("map %q: key/value size %d/%d, was %d/%d", s.Name, s.KeySize, s.ValueSize, o.KeySize, o.ValueSize)
	case s.MaxEntries != o.MaxEntries:
		return fmt.Errorf("map %q: max_entries %d, was %d", s.Name, s.MaxEntries, o.MaxEntries)
	case s.Flags != o.Flags:
		return fmt.Errorf("map %q: flags %#x, was %#x", s.Name, s.Flags, o.Flags)
	}
	return nil
}
