package maps

// #include "ncclbpf_maps.h"
import "C"

import (
	"fmt"
	"unsafe"
)

// ReadRing calls fn with every record submitted to a RingBuf map so far,
// oldest first, and drops each record after fn returns (the slice is only
// valid during the call: copy what you keep). It stops at a record that is
// reserved but not yet submitted, or after a call of fn that returns false.
// It returns the number of records consumed. One reader at a time;
// producers may run concurrently.
func (m *Map) ReadRing(fn func(record []byte) bool) (int, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.c == nil {
		return 0, fmt.Errorf("map %q: read ring: %w", m.spec.Name, ErrClosed)
	}
	if m.spec.Type != RingBuf {
		return 0, fmt.Errorf("map %q: read ring: %w (%s)", m.spec.Name, ErrNotSupported, m.spec.Type)
	}
	m.ringMu.Lock()
	defer m.ringMu.Unlock()
	n := 0
	for {
		var data unsafe.Pointer
		var size C.uint32_t
		if C.nbpf_ringbuf_peek(m.c, &data, &size) == 0 {
			return n, nil
		}
		more := fn(unsafe.Slice((*byte)(data), int(size)))
		C.nbpf_ringbuf_consume(m.c)
		n++
		if !more {
			return n, nil
		}
	}
}

// RingPending returns how many bytes of a RingBuf map are reserved and not
// yet consumed (headers and padding included).
func (m *Map) RingPending() uint64 {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.c == nil || m.spec.Type != RingBuf {
		return 0
	}
	return uint64(C.nbpf_ringbuf_pending(m.c))
}
