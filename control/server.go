package control

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/ncclbpf/ncclbpf/internal/envconfig"
)

// Environment variables of the control plane (read by the plugin;
// envconfig lists them all).
const (
	// EnvDir is the directory of the sockets; default DefaultDir.
	EnvDir = envconfig.ControlDir
	// EnvControl set to 0 disables the control server.
	EnvControl = envconfig.Control
)

// DefaultDir is the socket directory: $NCCLBPF_CONTROL_DIR, else
// $XDG_RUNTIME_DIR/ncclbpf, else /tmp/ncclbpf-UID.
func DefaultDir(getenv func(string) string) string {
	if d := getenv(EnvDir); d != "" {
		return d
	}
	if d := getenv("XDG_RUNTIME_DIR"); d != "" {
		return filepath.Join(d, "ncclbpf")
	}
	return filepath.Join(os.TempDir(), fmt.Sprintf("ncclbpf-%d", os.Getuid()))
}

// SocketPath is the socket of process pid in dir.
func SocketPath(dir string, pid int) string {
	return filepath.Join(dir, strconv.Itoa(pid)+".sock")
}

// Handler answers one well-formed request: a payload ParseRequest decoded
// and checked, one of the types of payloads.go.
type Handler func(Payload) *Response

// Server serves a Handler on a unix socket.
type Server struct {
	handler Handler
	// checkPeer decides whether a peer uid may talk to the server.
	checkPeer func(uid uint32) error
	// IdleTimeout closes connections that send nothing for that long.
	IdleTimeout time.Duration
	// WriteTimeout bounds writing one response.
	WriteTimeout time.Duration
	// ProgressTimeout bounds each wait for more of a large request (one
	// over SmallRequest): it holds the one large-request slot only while
	// its bytes keep coming. LargeTimeout bounds the whole of it.
	ProgressTimeout, LargeTimeout time.Duration
	// ReservedTimeout bounds the one small request of a connection
	// served on a reserved slot (when the MaxConns regular ones are taken).
	ReservedTimeout time.Duration

	ln    *net.UnixListener
	path  string
	lock  *os.File // the name's lock (owner.go), held while serving
	slots chan struct{}
	spare chan struct{} // ReservedConns slots for small requests when slots are full
	big   chan struct{} // held while a request over SmallRequest is read and handled
	wg    sync.WaitGroup
	mu    sync.Mutex
	conns map[net.Conn]bool
	done  bool
}

// MaxConns is the number of connections served at once; more get an error,
// but for ReservedConns more that may each send one small request, so that
// connections that hold every regular slot (idle or slow clients) cannot
// keep an operator's ps or stats out.
const (
	MaxConns      = 16
	ReservedConns = 2
)

// SameUID is the default peer check: only the server's own uid.
func SameUID(uid uint32) error {
	if me := uint32(os.Getuid()); uid != me {
		return fmt.Errorf("permission denied: peer uid %d is not the owner (uid %d) of this process", uid, me)
	}
	return nil
}

// Listen creates the socket of process pid in dir (creating dir with mode
// 0700 if needed; an existing dir must belong to this uid and be closed to
// others) and returns a server that answers with h. The socket is named
// PID.sock, or PID-nsINODE.sock when a live process of another PID
// namespace owns PID.sock; the name is owned through a lock file (see
// RemoveStale), and a stale socket of the same name (a dead process whose
// pid came back) is replaced. The socket is bound under a temporary name
// and renamed into place once it listens.
func Listen(dir string, pid int, h Handler) (*Server, error) {
	if err := ensureDir(dir); err != nil {
		return nil, err
	}
	// The longest name this may need: the temporary one of the namespaced form.
	if p := filepath.Join(dir, "."+strconv.Itoa(pid)+"-"+nsTag()+".tmp"); len(p) > maxSocketPath {
		return nil, fmt.Errorf("control directory %s: socket paths there would be up to %d bytes, over the %d a unix socket path may have; set %s to a shorter directory",
			dir, len(p), maxSocketPath, EnvDir)
	}
	name, lock, err := claim(dir, pid)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, name+".sock")
	tmp := filepath.Join(dir, "."+name+".tmp")
	fail := func(err error) (*Server, error) {
		os.Remove(tmp)
		os.Remove(filepath.Join(dir, name+".lock"))
		lock.Close()
		return nil, fmt.Errorf("control socket %s: %w", path, err)
	}
	os.Remove(tmp) // ours (we hold the lock): left by a crashed owner of the same name
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: tmp, Net: "unix"})
	if err != nil {
		return fail(err)
	}
	ln.SetUnlinkOnClose(false)
	if err := os.Chmod(tmp, 0o600); err != nil {
		ln.Close()
		return fail(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		ln.Close()
		return fail(err)
	}
	return &Server{handler: h, checkPeer: SameUID, IdleTimeout: 60 * time.Second, WriteTimeout: 30 * time.Second,
		ProgressTimeout: 2 * time.Second, LargeTimeout: 10 * time.Second, ReservedTimeout: 5 * time.Second,
		ln: ln, path: path, lock: lock, slots: make(chan struct{}, MaxConns), spare: make(chan struct{}, ReservedConns),
		big: make(chan struct{}, 1), conns: map[net.Conn]bool{}}, nil
}

// Descriptors returns the file descriptors of the listening socket and of
// the lock file (for a fork handler that closes them in the child).
func (s *Server) Descriptors() (listener, lock int) {
	listener = -1
	if raw, err := s.ln.SyscallConn(); err == nil {
		raw.Control(func(fd uintptr) { listener = int(fd) })
	}
	return listener, int(s.lock.Fd())
}

func ensureDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("control directory %s: %w", dir, err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("control directory %s: %w", dir, err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case !fi.IsDir():
		return fmt.Errorf("control directory %s: not a directory", dir)
	case ok && st.Uid != uint32(os.Getuid()):
		return fmt.Errorf("control directory %s: owned by uid %d, not by this process's uid %d", dir, st.Uid, os.Getuid())
	case fi.Mode().Perm()&0o077 != 0:
		if err := os.Chmod(dir, 0o700); err != nil {
			return fmt.Errorf("control directory %s: mode %v is open to others and cannot be fixed: %w", dir, fi.Mode().Perm(), err)
		}
	}
	return nil
}

// SetPeerCheck replaces the peer check (default SameUID); for tests.
func (s *Server) SetPeerCheck(f func(uid uint32) error) { s.checkPeer = f }

// Path returns the socket's path.
func (s *Server) Path() string { return s.path }

// Serve accepts connections until Close; it returns nil after Close.
func (s *Server) Serve() error {
	for {
		c, err := s.ln.AcceptUnix()
		if err != nil {
			s.mu.Lock()
			done := s.done
			s.mu.Unlock()
			if done {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			if errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) {
				time.Sleep(50 * time.Millisecond)
				continue
			}
			return fmt.Errorf("control socket %s: accept: %w", s.path, err)
		}
		slot := s.slots
		select {
		case s.slots <- struct{}{}:
		default:
			select {
			case s.spare <- struct{}{}:
				slot = s.spare
			default:
				s.reply(c, &Response{Error: fmt.Sprintf("busy: %d connections already open", MaxConns+ReservedConns)})
				c.Close()
				continue
			}
		}
		s.mu.Lock()
		s.conns[c] = true
		s.mu.Unlock()
		s.wg.Add(1)
		go func() {
			defer func() {
				s.mu.Lock()
				delete(s.conns, c)
				s.mu.Unlock()
				c.Close()
				<-slot
				s.wg.Done()
			}()
			s.serveConn(c, slot == s.spare)
		}()
	}
}

// Close stops the server, closes its connections and removes the socket.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.done {
		s.mu.Unlock()
		return nil
	}
	s.done = true
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	// Remove the name while still holding its lock: nobody else can own it yet.
	os.Remove(s.path)
	err := s.ln.Close()
	s.wg.Wait()
	os.Remove(strings.TrimSuffix(s.path, ".sock") + ".lock")
	s.lock.Close()
	return err
}

// peerUID returns the uid of the process at the other end (SO_PEERCRED).
func peerUID(c *net.UnixConn) (uint32, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return 0, err
	}
	var cred *syscall.Ucred
	var cerr error
	if err := raw.Control(func(fd uintptr) {
		cred, cerr = syscall.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED)
	}); err != nil {
		return 0, err
	}
	if cerr != nil {
		return 0, fmt.Errorf("SO_PEERCRED: %w", cerr)
	}
	return cred.Uid, nil
}

func (s *Server) reply(c net.Conn, r *Response) error {
	if r.Error == "" {
		r.OK = true
	}
	b, err := json.Marshal(r)
	if err != nil {
		b, _ = json.Marshal(&Response{Error: "internal error: encoding the response: " + err.Error()})
	}
	c.SetWriteDeadline(time.Now().Add(s.WriteTimeout))
	_, err = c.Write(append(b, '\n'))
	return err
}

var errTooLong = fmt.Errorf("request longer than %d bytes", MaxRequest)

// SmallRequest is the size up to which requests are read and handled
// concurrently (every request but a reload's policy object). Larger ones
// are read and handled one at a time per server, so that many large
// requests at once cost the memory of one.
const SmallRequest = 64 << 10

// readLine reads one line of at most max bytes (newline included) and
// returns it without the newline. Once the line grows past SmallRequest it
// calls big first (which may refuse). before, if not nil, runs before each
// read (to set its deadline).
func readLine(r *bufio.Reader, max int, big func() error, before func()) ([]byte, error) {
	var line []byte
	for {
		if before != nil {
			before()
		}
		chunk, err := r.ReadSlice('\n')
		if len(line)+len(chunk) > max {
			return nil, errTooLong
		}
		if len(line) <= SmallRequest && len(line)+len(chunk) > SmallRequest && big != nil {
			if err := big(); err != nil {
				return nil, err
			}
		}
		line = append(line, chunk...)
		switch {
		case err == nil:
			return line[:len(line)-1], nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && len(line) > 0:
			return nil, fmt.Errorf("request not terminated by a newline: %w", io.ErrUnexpectedEOF)
		default:
			return nil, err
		}
	}
}

// serveConn answers the requests of one connection. A connection on a
// reserved slot gets one small request, read within ReservedTimeout. A large
// request holds the large-request slot only while it progresses: each
// read waits at most ProgressTimeout, the whole at most LargeTimeout.
func (s *Server) serveConn(c *net.UnixConn, reserved bool) {
	uid, err := peerUID(c)
	if err == nil {
		err = s.checkPeer(uid)
	}
	if err != nil {
		s.reply(c, &Response{Error: err.Error()})
		return
	}
	r := bufio.NewReaderSize(c, 64<<10)
	for {
		if reserved {
			c.SetReadDeadline(time.Now().Add(s.ReservedTimeout))
		} else {
			c.SetReadDeadline(time.Now().Add(s.IdleTimeout))
		}
		holding := false
		var bigEnd time.Time
		line, err := readLine(r, MaxRequest, func() error {
			if reserved {
				return errBusyReserved
			}
			select {
			case s.big <- struct{}{}:
				holding = true
				bigEnd = time.Now().Add(s.LargeTimeout)
				return nil
			case <-time.After(s.LargeTimeout + s.ProgressTimeout):
				return errBusy
			}
		}, func() {
			if holding {
				d := time.Now().Add(s.ProgressTimeout)
				if bigEnd.Before(d) {
					d = bigEnd
				}
				c.SetReadDeadline(d)
			}
		})
		if err != nil {
			if holding {
				s.releaseBig()
			}
			if holding && errors.Is(err, os.ErrDeadlineExceeded) {
				err = errStalled
			}
			if errors.Is(err, errTooLong) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, errBusy) ||
				errors.Is(err, errBusyReserved) || errors.Is(err, errStalled) {
				// The rest of the stream cannot be trusted to start a request: answer and close.
				if s.reply(c, &Response{Error: "bad request: " + err.Error()}) == nil && !errors.Is(err, io.ErrUnexpectedEOF) {
					s.drain(c)
				}
			}
			return
		}
		c.SetReadDeadline(time.Time{})
		resp := s.handle(line)
		if holding {
			line = nil
			s.releaseBig()
		}
		if s.reply(c, resp) != nil || reserved {
			return
		}
	}
}

var (
	errBusy         = errors.New("busy: another large request is being handled; try again")
	errBusyReserved = fmt.Errorf("busy: %d connections already open; only a small request is served now, try the large one again", MaxConns)
	errStalled      = errors.New("large request stalled: its bytes stopped coming, or it took too long")
)

// drain lets a client that is still sending a refused request read the
// refusal: closing with its bytes unread would fail its write (EPIPE)
// before it reads anything. The answer is sent and the write side shut;
// what still comes is read into a small buffer and dropped, for as long
// as it progresses (each read within ProgressTimeout, all within
// LargeTimeout), so a stalled client holds its connection no longer.
func (s *Server) drain(c *net.UnixConn) {
	c.CloseWrite()
	end := time.Now().Add(s.LargeTimeout)
	var buf [16 << 10]byte
	for {
		d := time.Now().Add(s.ProgressTimeout)
		if end.Before(d) {
			d = end
		}
		c.SetReadDeadline(d)
		if _, err := c.Read(buf[:]); err != nil {
			return
		}
	}
}

// releaseBig ends a large request: its memory goes back to the system at
// once (the host process is a training job, not ours to grow).
func (s *Server) releaseBig() {
	debug.FreeOSMemory()
	<-s.big
}

// handle parses one request line and runs the handler; it never panics.
func (s *Server) handle(line []byte) (resp *Response) {
	defer func() {
		if r := recover(); r != nil {
			resp = &Response{Error: fmt.Sprintf("internal error: %v", r)}
		}
	}()
	req, err := ParseRequest(line)
	if err != nil {
		return errResponse(err)
	}
	resp = s.handler(req)
	if resp == nil {
		resp = &Response{Error: "internal error: no response"}
	}
	return resp
}
