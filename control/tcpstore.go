package control

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// A client of PyTorch's TCPStore wire protocol (the store torchrun starts
// at MASTER_ADDR:MASTER_PORT), written from the protocol's observable
// behaviour: one query type byte, then its arguments; strings and byte
// vectors as a little-endian uint64 length and the bytes; integers as
// little-endian int64. Keys go on the wire with the "/" prefix the Python
// client adds, so that `store.get("ncclbpf/...")` in Python reads the same
// key.
//
// Two generations of the protocol exist: PyTorch 2.x numbers the queries
// from VALIDATE (0) and expects a VALIDATE with a magic number first;
// PyTorch 1.x numbers them from SET (0) and has no VALIDATE. Dial tells
// them apart with a probe both parse as one complete 18-byte query: a 1.x
// server reads CHECK(key "\x00") and answers 1 byte, a 2.x server reads
// ADD(key "\x01", 0) and answers 8 (a 2.x server that insists on VALIDATE
// first closes the connection: also 2.x). Nothing else is ever sent that
// an older or newer server could misread.

// TCPStore is one connection to a TCPStore server.
type TCPStore struct {
	addr    string
	gen     int // 1: PyTorch 1.x numbering, 2: 2.x
	timeout time.Duration
	mu      sync.Mutex
	c       net.Conn
	r       *bufio.Reader

	// idle holds the connections of finished waits, for the next ones (a
	// wait that timed out is dropped with its connection).
	wmu    sync.Mutex
	idle   []*TCPStore
	closed bool
}

// Query types, 2.x numbering (1.x: one less up to GETNUMKEYS, no VALIDATE;
// DELETE_KEY is 8 in both).
const (
	tsValidate   = 0
	tsSet        = 1
	tsCompareSet = 2
	tsGet        = 3
	tsAdd        = 4
	tsCheck      = 5
	tsWait       = 6
	tsNumKeys    = 7
	tsDelete     = 8
	tsMagic      = 0x3C85F7CE
)

// ErrStoreTimeout says that a store did not answer in time.
var ErrStoreTimeout = errors.New("store: no answer in time")

// DialTCPStore connects to a TCPStore server at addr (host:port); timeout
// bounds the connection and every call.
func DialTCPStore(addr string, timeout time.Duration) (*TCPStore, error) {
	s := &TCPStore{addr: addr, timeout: timeout}
	gen, err := s.probe()
	if err != nil {
		return nil, fmt.Errorf("tcpstore %s: %w", addr, err)
	}
	s.gen = gen
	if err := s.connect(); err != nil {
		return nil, fmt.Errorf("tcpstore %s: %w", addr, err)
	}
	return s, nil
}

func (s *TCPStore) dial() (net.Conn, error) {
	c, err := net.DialTimeout("tcp", s.addr, s.timeout)
	if err != nil {
		return nil, err
	}
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetNoDelay(true)
	}
	return c, nil
}

// probeQuiet is how long the probe waits for an answer before it gives a
// libuv server the byte it waits for.
const probeQuiet = 300 * time.Millisecond

// probe tells the protocol generations apart (see above).
func (s *TCPStore) probe() (int, error) {
	c, err := s.dial()
	if err != nil {
		return 0, err
	}
	defer c.Close()
	var q [18]byte
	q[0] = 4 // 1.x CHECK, 2.x ADD
	q[1] = 1 // 1.x: one key; 2.x: a key of one byte, 0x01 (next byte)
	q[9] = 1 // 1.x: that key is one byte long; 2.x: the key (0x01) and the increment, 0
	// q[17]: 1.x: the key, 0x00; 2.x: the increment's last byte, 0.
	c.SetDeadline(time.Now().Add(s.timeout))
	if _, err := c.Write(q[:]); err != nil {
		return 0, err
	}
	var b [8]byte
	// A 1.x server answers the CHECK at once. PyTorch 2.x's libuv server
	// (the default since 2.4) parses a new connection's first query only
	// as a VALIDATE: anything else waits, unparsed, until more bytes come,
	// and is then read as an ordinary query. So when no answer comes
	// quickly, one more byte (0: a 1.x SET or a 2.x VALIDATE, incomplete
	// either way, dropped with the connection) makes such a server read
	// the probe as the ADD it is.
	c.SetReadDeadline(time.Now().Add(min(s.timeout, probeQuiet)))
	if _, err := io.ReadFull(c, b[:1]); err != nil {
		if errors.Is(err, io.EOF) {
			return 2, nil // refused before a VALIDATE: 2.x
		}
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			return 0, fmt.Errorf("probe: %w", err)
		}
		c.SetDeadline(time.Now().Add(s.timeout))
		if _, err := c.Write([]byte{0}); err != nil {
			return 0, fmt.Errorf("probe: %w", err)
		}
		if _, err := io.ReadFull(c, b[:1]); err != nil {
			if errors.Is(err, io.EOF) {
				return 2, nil
			}
			return 0, fmt.Errorf("probe: %w", err)
		}
	}
	c.SetReadDeadline(time.Now().Add(min(s.timeout, 300*time.Millisecond)))
	if n, _ := io.ReadFull(c, b[1:]); n == 7 {
		return 2, nil
	}
	return 1, nil
}

func (s *TCPStore) connect() error {
	c, err := s.dial()
	if err != nil {
		return err
	}
	if s.gen == 2 {
		var v [5]byte
		v[0] = tsValidate
		binary.LittleEndian.PutUint32(v[1:], tsMagic)
		c.SetWriteDeadline(time.Now().Add(s.timeout))
		if _, err := c.Write(v[:]); err != nil {
			c.Close()
			return err
		}
	}
	s.c, s.r = c, bufio.NewReader(c)
	return nil
}

// Generation is the protocol generation found: 1 (PyTorch 1.x) or 2.
func (s *TCPStore) Generation() int { return s.gen }

// Close closes the connection.
func (s *TCPStore) Close() error {
	s.wmu.Lock()
	idle := s.idle
	s.idle, s.closed = nil, true
	s.wmu.Unlock()
	for _, w := range idle {
		w.Close()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.c == nil {
		return nil
	}
	err := s.c.Close()
	s.c = nil
	return err
}

type tsMsg []byte

func (m tsMsg) bytes(b []byte) tsMsg {
	m = binary.LittleEndian.AppendUint64(m, uint64(len(b)))
	return append(m, b...)
}

func (m tsMsg) key(k string) tsMsg { return m.bytes([]byte("/" + k)) }

func (s *TCPStore) query(q byte) tsMsg {
	// 1.x: SET..GETNUMKEYS one less; WATCH_KEY (7) then DELETE_KEY (8).
	if s.gen == 1 && q != tsDelete {
		q--
	}
	return tsMsg{q}
}

// roundTrip sends m and reads the answer with read, under the call timeout
// (longer: wait). A failed call closes the connection; the next reconnects.
func (s *TCPStore) roundTrip(m tsMsg, wait time.Duration, read func(r *bufio.Reader) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.exchange(m, wait, read)
}

// call is a round trip on the store's connection, or, while another call
// holds it, on an idle one: concurrent calls do not queue behind each other.
func (s *TCPStore) call(m tsMsg, read func(r *bufio.Reader) error) error {
	if s.mu.TryLock() {
		defer s.mu.Unlock()
		return s.exchange(m, 0, read)
	}
	w := s.waiter()
	defer s.release(w)
	return w.roundTrip(m, 0, read)
}

func (s *TCPStore) exchange(m tsMsg, wait time.Duration, read func(r *bufio.Reader) error) error {
	if s.c == nil {
		if err := s.connect(); err != nil {
			return fmt.Errorf("tcpstore %s: %w", s.addr, err)
		}
	}
	d := s.timeout
	if wait > 0 {
		d = wait
	}
	s.c.SetDeadline(time.Now().Add(d))
	_, err := s.c.Write(m)
	if err == nil && read != nil {
		err = read(s.r)
	}
	if err != nil {
		s.c.Close()
		s.c = nil
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return fmt.Errorf("tcpstore %s: %w", s.addr, ErrStoreTimeout)
		}
		return fmt.Errorf("tcpstore %s: %w", s.addr, err)
	}
	return nil
}

func readVec(r *bufio.Reader) ([]byte, error) {
	var n [8]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return nil, err
	}
	l := binary.LittleEndian.Uint64(n[:])
	if l > 64<<20 {
		return nil, fmt.Errorf("answer of %d bytes: not a TCPStore", l)
	}
	b := make([]byte, l)
	_, err := io.ReadFull(r, b)
	return b, err
}

// Set sets key to value.
func (s *TCPStore) Set(key string, value []byte) error {
	return s.call(s.query(tsSet).key(key).bytes(value), nil)
}

// CompareSet sets key to desired if its value is expected (a missing key
// counts as the empty value... as the server defines it) and returns the
// value after the call.
func (s *TCPStore) CompareSet(key string, expected, desired []byte) ([]byte, error) {
	var out []byte
	err := s.call(s.query(tsCompareSet).key(key).bytes(expected).bytes(desired), func(r *bufio.Reader) (err error) {
		out, err = readVec(r)
		return err
	})
	return out, err
}

// Add adds delta to the integer at key (0 when missing) and returns the sum.
func (s *TCPStore) Add(key string, delta int64) (int64, error) {
	var out int64
	m := binary.LittleEndian.AppendUint64(s.query(tsAdd).key(key), uint64(delta))
	err := s.call(m, func(r *bufio.Reader) error {
		var b [8]byte
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return err
		}
		out = int64(binary.LittleEndian.Uint64(b[:]))
		return nil
	})
	return out, err
}

// Check reports whether every key is set.
func (s *TCPStore) Check(keys ...string) (bool, error) {
	m := tsMsg(binary.LittleEndian.AppendUint64(s.query(tsCheck), uint64(len(keys))))
	for _, k := range keys {
		m = m.key(k)
	}
	var ready bool
	err := s.call(m, func(r *bufio.Reader) error {
		b, err := r.ReadByte()
		ready = b == 0
		return err
	})
	return ready, err
}

// Get returns the value of key; ok false when it is not set (checked
// first: the server's GET of a missing key is not an answer).
func (s *TCPStore) Get(key string) (value []byte, ok bool, err error) {
	if ok, err := s.Check(key); err != nil || !ok {
		return nil, false, err
	}
	err = s.call(s.query(tsGet).key(key), func(r *bufio.Reader) (err error) {
		value, err = readVec(r)
		return err
	})
	return value, err == nil, err
}

// Wait blocks until every key is set, at most d (ErrStoreTimeout). The
// wait holds a connection of its own (a timed-out wait is dropped with it).
func (s *TCPStore) Wait(d time.Duration, keys ...string) error {
	w := s.waiter()
	defer s.release(w)
	return w.wait(d, keys...)
}

func (s *TCPStore) wait(d time.Duration, keys ...string) error {
	m := tsMsg(binary.LittleEndian.AppendUint64(s.query(tsWait), uint64(len(keys))))
	for _, k := range keys {
		m = m.key(k)
	}
	return s.roundTrip(m, d, func(r *bufio.Reader) error {
		_, err := r.ReadByte()
		return err
	})
}

// waiter is a connection for a wait: an idle one, or a new one.
func (s *TCPStore) waiter() *TCPStore {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if n := len(s.idle); n > 0 {
		w := s.idle[n-1]
		s.idle = s.idle[:n-1]
		return w
	}
	return &TCPStore{addr: s.addr, gen: s.gen, timeout: s.timeout}
}

// release keeps w for the next wait if its connection is sound.
func (s *TCPStore) release(w *TCPStore) {
	w.mu.Lock()
	sound := w.c != nil
	w.mu.Unlock()
	s.wmu.Lock()
	if sound && !s.closed && len(s.idle) < 256 {
		s.idle = append(s.idle, w)
		s.wmu.Unlock()
		return
	}
	s.wmu.Unlock()
	w.Close()
}

// Post implements ExchangeStore: the number, then the write (a TCPStore
// keeps no revisions).
func (s *TCPStore) Post(counter, prefix string, value []byte) (int64, int64, error) {
	k, err := s.Add(counter, 1)
	if err != nil {
		return 0, 0, err
	}
	return k, 0, s.Set(prefix+strconv.FormatInt(k, 10), value)
}

// Take implements ExchangeStore: the wait, then the read on the wait's
// connection; with del, the read and the removal go in one write (the key
// is there, and only the caller removes it).
func (s *TCPStore) Take(d time.Duration, key string, rev int64, del bool) ([]byte, bool, error) {
	w := s.waiter()
	defer s.release(w)
	if err := w.wait(d, key); err != nil {
		return nil, false, err
	}
	if !del {
		return w.Get(key)
	}
	var value []byte
	m := append(w.query(tsGet).key(key), w.query(tsDelete).key(key)...)
	err := w.call(m, func(r *bufio.Reader) (err error) {
		if value, err = readVec(r); err != nil {
			return err
		}
		var n [8]byte
		_, err = io.ReadFull(r, n[:])
		return err
	})
	return value, err == nil, err
}

// SetDelete implements ExchangeStore: both queries in one write.
func (s *TCPStore) SetDelete(set string, value []byte, del string) error {
	m := append(s.query(tsSet).key(set).bytes(value), s.query(tsDelete).key(del)...)
	return s.call(m, func(r *bufio.Reader) error {
		var n [8]byte
		_, err := io.ReadFull(r, n[:])
		return err
	})
}

// Delete removes key; it reports whether it was there.
func (s *TCPStore) Delete(key string) (bool, error) {
	var n int64
	err := s.call(s.query(tsDelete).key(key), func(r *bufio.Reader) error {
		var b [8]byte
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return err
		}
		n = int64(binary.LittleEndian.Uint64(b[:]))
		return nil
	})
	return n > 0, err
}

// String names the store for messages.
func (s *TCPStore) String() string {
	return "tcpstore://" + strings.TrimPrefix(s.addr, "tcp://")
}
