package control

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"sort"
	"strconv"
	"strings"
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
func Dial(path string) (*Client, error) {
	c, err := net.DialTimeout("unix", path, 2*time.Second)
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

// Call sends req and returns the response; a response with OK false is
// returned as an error too.
func (c *Client) Call(req *Request) (*Response, error) {
	b, err := json.Marshal(req)
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
			return nil, fmt.Errorf("sending %s: %w", req.Op, werr)
		}
		return nil, fmt.Errorf("reading the answer to %s: %w", req.Op, err)
	}
	var resp Response
	if err := json.Unmarshal(line, &resp); err != nil {
		return nil, fmt.Errorf("answer to %s: %w", req.Op, err)
	}
	if !resp.OK {
		if strings.HasPrefix(resp.Error, "permission denied") {
			return &resp, fmt.Errorf("%s: %w", resp.Error, ErrPermission)
		}
		return &resp, errors.New(resp.Error)
	}
	return &resp, nil
}

// Entry is a socket found by Scan.
type Entry struct {
	PID  int
	Path string
}

// Scan lists the sockets in dir named by a pid ("1234.sock"), by pid. It
// does not connect: callers skip the stale ones (Dial says ErrStale).
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
		pid, err := strconv.Atoi(name)
		if err != nil || pid <= 0 {
			continue
		}
		out = append(out, Entry{PID: pid, Path: SocketPath(dir, pid)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].PID < out[j].PID })
	return out, nil
}
