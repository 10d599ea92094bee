package control

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Errors of Dial, for the CLI's messages (errors.Is).
var (
	ErrNoProcess  = errors.New("no ncclbpf control socket for that process (not running, not using libncclbpf.so, control disabled, or another NCCLBPF_CONTROL_DIR)")
	ErrStale      = errors.New("stale control socket: the process is gone")
	ErrPermission = errors.New("permission denied: the process belongs to another user")
)

// Client is a connection to one process's control socket.
type Client struct {
	c       net.Conn
	r       *bufio.Reader
	Timeout time.Duration // per call; default 2 minutes
}

// Dial connects to the socket at path.
func Dial(path string) (*Client, error) { return dialTimeout(path, 2*time.Second) }

func dialTimeout(path string, timeout time.Duration) (*Client, error) {
	c, err := net.DialTimeout("unix", path, timeout)
	if err != nil {
		switch {
		case errors.Is(err, syscall.ENOENT):
			return nil, fmt.Errorf("%s: %w", path, ErrNoProcess)
		case errors.Is(err, syscall.ECONNREFUSED):
			return nil, fmt.Errorf("%s: %w", path, ErrStale)
		case errors.Is(err, syscall.EACCES), errors.Is(err, syscall.EPERM):
			return nil, fmt.Errorf("%s: %w", path, ErrPermission)
		}
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &Client{c: c, r: bufio.NewReaderSize(c, 64<<10), Timeout: 2 * time.Minute}, nil
}

// DialPID connects to process pid's socket in dir.
func DialPID(dir string, pid int) (*Client, error) { return Dial(SocketPath(dir, pid)) }

// Close closes the connection.
func (c *Client) Close() error { return c.c.Close() }

// Call sends the request of payload req and returns the response; a
// response with OK false is returned as an error too. The payload's type
// names the operation, so a request cannot carry another operation's fields.
func (c *Client) Call(req Payload) (*Response, error) {
	b, err := EncodeRequest(req)
	if err != nil {
		return nil, err
	}
	if len(b)+1 > MaxRequest {
		return nil, fmt.Errorf("request of %d bytes is longer than the %d the server reads", len(b)+1, MaxRequest)
	}
	c.c.SetDeadline(time.Now().Add(c.Timeout))
	_, werr := c.c.Write(append(b, '\n'))
	// Even if the write failed, the server may have answered before closing
	// (a refused peer): read that answer first.
	line, err := c.r.ReadBytes('\n')
	if err != nil {
		if werr != nil {
			return nil, fmt.Errorf("sending %s: %w", req.Op(), werr)
		}
		return nil, fmt.Errorf("reading the answer to %s: %w", req.Op(), err)
	}
	var resp Response
	if err := json.Unmarshal(line, &resp); err != nil {
		return nil, fmt.Errorf("answer to %s: %w", req.Op(), err)
	}
	if !resp.OK {
		if strings.HasPrefix(resp.Error, "permission denied") {
			return &resp, permError(resp.Error)
		}
		return &resp, answerError(resp.Error)
	}
	return &resp, nil
}

// answerError is the error of a refused request. A library of protocol
// version 1 refuses the envelope's "v" as an unknown field: say that the
// versions differ rather than echo a decoding error.
func answerError(msg string) error {
	if strings.Contains(msg, `unknown field "v"`) {
		return fmt.Errorf("the process's libncclbpf.so speaks control protocol version 1, this ncclbpf version %d: use the ncclbpf command of the same release as the library (%s)", ProtocolVersion, msg)
	}
	return errors.New(msg)
}

// permError is the server's "permission denied" answer; it matches
// ErrPermission without repeating its text.
type permError string

func (e permError) Error() string        { return string(e) }
func (e permError) Is(target error) bool { return target == ErrPermission }

// Entry is a socket found by Scan.
type Entry struct {
	PID int
	// Name is the socket's name without ".sock": the pid, or
	// "PID-nsINODE" for a process whose pid was taken in the directory by
	// a process of another PID namespace.
	Name string
	Path string
}

// Scan lists the sockets in dir named by a pid ("1234.sock",
// "1234-ns4026531836.sock"), by pid. It does not connect: callers skip the
// stale ones (Dial says ErrStale).
func Scan(dir string) ([]Entry, error) {
	des, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	var out []Entry
	for _, de := range des {
		name, ok := strings.CutSuffix(de.Name(), ".sock")
		if !ok || de.Type()&os.ModeSocket == 0 {
			continue
		}
		pid, ok := parseName(name)
		if !ok {
			continue
		}
		out = append(out, Entry{PID: pid, Name: name, Path: filepath.Join(dir, de.Name())})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].PID != out[j].PID {
			return out[i].PID < out[j].PID
		}
		return out[i].Name < out[j].Name
	})
	return out, nil
}

// NamePath is the socket path of a target given as a pid or a socket name
// ("1234", "1234-ns4026531836").
func NamePath(dir, name string) (string, error) {
	if _, ok := parseName(name); !ok {
		return "", fmt.Errorf("%q is neither a process id nor a control socket name (PID or PID-nsINODE)", name)
	}
	return filepath.Join(dir, name+".sock"), nil
}

// Result is the answer of one process to QueryAll.
type Result struct {
	Entry
	Resp *Response
	Err  error
}

// QueryAll sends req to every entry at once, each connection bounded by
// timeout (dial, send and answer), and returns the results in the order
// of entries. A process that accepts but never answers costs timeout, not
// more, and does not delay the others.
func QueryAll(entries []Entry, req Payload, timeout time.Duration) []Result {
	out := make([]Result, len(entries))
	var wg sync.WaitGroup
	for i, e := range entries {
		out[i].Entry = e
		wg.Add(1)
		go func(r *Result) {
			defer wg.Done()
			c, err := dialTimeout(r.Path, timeout)
			if err != nil {
				r.Err = err
				return
			}
			defer c.Close()
			c.Timeout = timeout
			r.Resp, r.Err = c.Call(req)
		}(&out[i])
	}
	wg.Wait()
	return out
}
