package control

import (
	"bufio"
	"context"
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

// http1 is the HTTP/1.1 client of etcd's JSON gateway, over plain TCP:
// POST of a JSON body, an answer with a Content-Length or chunked body,
// kept-alive connections reused. It is all the plugin needs of HTTP, and
// it keeps net/http (with crypto/tls, HTTP/2 and their package
// initialisation, megabytes of resident memory) out of NCCL's processes.
type http1 struct {
	addr string

	mu   sync.Mutex
	idle []*h1conn
}

// maxIdle bounds the connections kept open between calls.
const maxIdle = 16

// maxBody bounds an answer's body read whole.
const maxBody = 64 << 20

type h1conn struct {
	c net.Conn
	r *bufio.Reader
}

// h1resp is an answer whose body is being read.
type h1resp struct {
	status int
	text   string // the status line's reason
	body   io.Reader
	conn   *h1conn
	reuse  bool // the connection may carry another request once body is read
}

func (h *http1) dial(ctx context.Context) (*h1conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", h.addr)
	if err != nil {
		return nil, err
	}
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetNoDelay(true)
	}
	return &h1conn{c: c, r: bufio.NewReaderSize(c, 4096)}, nil
}

func (h *http1) take() *h1conn {
	h.mu.Lock()
	defer h.mu.Unlock()
	if n := len(h.idle); n > 0 {
		c := h.idle[n-1]
		h.idle = h.idle[:n-1]
		return c
	}
	return nil
}

func (h *http1) give(c *h1conn) {
	c.c.SetDeadline(time.Time{})
	h.mu.Lock()
	if len(h.idle) < maxIdle {
		h.idle = append(h.idle, c)
		c = nil
	}
	h.mu.Unlock()
	if c != nil {
		c.c.Close()
	}
}

// closeIdle closes the connections kept between calls.
func (h *http1) closeIdle() {
	h.mu.Lock()
	idle := h.idle
	h.idle = nil
	h.mu.Unlock()
	for _, c := range idle {
		c.c.Close()
	}
}

// errNothingRead says that a kept-alive connection failed before any
// byte of the answer came (the server had closed it): the request can go
// again on a fresh one.
var errNothingRead = errors.New("connection closed before the answer")

// do sends a POST of body to path and reads the answer's head; the body
// is left to the caller (finish or drop). ctx bounds the whole exchange,
// the caller's reading of the body included.
func (h *http1) do(ctx context.Context, path string, body []byte) (*h1resp, func(), error) {
	for attempt := 0; ; attempt++ {
		c := h.take()
		reused := c != nil
		if c == nil {
			var err error
			if c, err = h.dial(ctx); err != nil {
				return nil, nil, err
			}
		}
		// the deadline, and a cancellation, reach the connection
		if d, ok := ctx.Deadline(); ok {
			c.c.SetDeadline(d)
		}
		stop := context.AfterFunc(ctx, func() { c.c.SetDeadline(time.Unix(1, 0)) })
		release := func() { stop() }
		r, err := h.exchange(c, path, body)
		if err == nil {
			return r, release, nil
		}
		release()
		c.c.Close()
		if reused && errors.Is(err, errNothingRead) && attempt == 0 && ctx.Err() == nil {
			continue
		}
		return nil, nil, err
	}
}

func (h *http1) exchange(c *h1conn, path string, body []byte) (*h1resp, error) {
	req := make([]byte, 0, 160+len(path)+len(h.addr)+len(body))
	req = append(req, "POST "...)
	req = append(req, path...)
	req = append(req, " HTTP/1.1\r\nHost: "...)
	req = append(req, h.addr...)
	req = append(req, "\r\nContent-Type: application/json\r\nContent-Length: "...)
	req = strconv.AppendInt(req, int64(len(body)), 10)
	req = append(req, "\r\n\r\n"...)
	req = append(req, body...)
	if _, err := c.c.Write(req); err != nil {
		return nil, fmt.Errorf("%w: %v", errNothingRead, err)
	}
	line, err := c.r.ReadSlice('\n')
	if err != nil {
		if len(line) == 0 && (err == io.EOF || errors.Is(err, net.ErrClosed) || isReset(err)) {
			return nil, fmt.Errorf("%w: %v", errNothingRead, err)
		}
		return nil, err
	}
	// HTTP/1.1 200 OK
	proto, rest, _ := strings.Cut(strings.TrimRight(string(line), "\r\n"), " ")
	code, text, _ := strings.Cut(rest, " ")
	status, err := strconv.Atoi(code)
	if !strings.HasPrefix(proto, "HTTP/1.") || err != nil {
		return nil, fmt.Errorf("not an HTTP/1 answer: %q", line)
	}
	r := &h1resp{status: status, text: text, conn: c, reuse: proto == "HTTP/1.1"}
	length, chunked := int64(-1), false
	for {
		line, err := c.r.ReadSlice('\n')
		if err != nil {
			return nil, err
		}
		l := strings.TrimRight(string(line), "\r\n")
		if l == "" {
			break
		}
		k, v, ok := strings.Cut(l, ":")
		if !ok {
			return nil, fmt.Errorf("malformed header line %q", l)
		}
		v = strings.TrimSpace(v)
		switch strings.ToLower(strings.TrimSpace(k)) {
		case "content-length":
			if length, err = strconv.ParseInt(v, 10, 64); err != nil || length < 0 {
				return nil, fmt.Errorf("malformed Content-Length %q", v)
			}
		case "transfer-encoding":
			chunked = strings.EqualFold(v, "chunked")
			if !chunked && !strings.EqualFold(v, "identity") {
				return nil, fmt.Errorf("unsupported Transfer-Encoding %q", v)
			}
		case "connection":
			if strings.EqualFold(v, "close") {
				r.reuse = false
			}
		}
	}
	switch {
	case chunked:
		r.body = &chunkReader{r: c.r}
	case length >= 0:
		r.body = io.LimitReader(c.r, length)
	default: // the body ends with the connection
		r.body, r.reuse = c.r, false
	}
	return r, nil
}

func isReset(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && !op.Timeout()
}

// readAll reads the whole body and hands the connection back for reuse
// when the server lets it.
func (h *http1) readAll(r *h1resp) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r.body, maxBody+1))
	if err == nil && len(b) > maxBody {
		err = fmt.Errorf("an answer over %d bytes", maxBody)
	}
	if err != nil || !r.reuse {
		r.conn.c.Close()
		return b, err
	}
	h.give(r.conn)
	return b, nil
}

// chunkReader reads a chunked body (RFC 9112 7.1), trailers dropped.
type chunkReader struct {
	r    *bufio.Reader
	left int64 // bytes left in the current chunk
	done bool
	err  error
}

func (c *chunkReader) Read(p []byte) (int, error) {
	for c.left == 0 && !c.done && c.err == nil {
		c.err = c.next()
	}
	if c.err != nil {
		return 0, c.err
	}
	if c.done {
		return 0, io.EOF
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	if err == nil && c.left == 0 {
		err = c.crlf()
	}
	if err != nil {
		c.err = err
	}
	return n, err
}

func (c *chunkReader) crlf() error {
	line, err := c.r.ReadSlice('\n')
	if err != nil {
		return noEOF(err)
	}
	if strings.TrimRight(string(line), "\r\n") != "" {
		return errors.New("malformed chunk: no CRLF after its data")
	}
	return nil
}

func (c *chunkReader) next() error {
	line, err := c.r.ReadSlice('\n')
	if err != nil {
		return noEOF(err)
	}
	l := strings.TrimRight(string(line), "\r\n")
	l, _, _ = strings.Cut(l, ";") // chunk extensions
	n, err := strconv.ParseInt(strings.TrimSpace(l), 16, 64)
	if err != nil || n < 0 {
		return fmt.Errorf("malformed chunk size %q", l)
	}
	if n > 0 {
		c.left = n
		return nil
	}
	for { // trailers, up to the blank line
		line, err := c.r.ReadSlice('\n')
		if err != nil {
			return noEOF(err)
		}
		if strings.TrimRight(string(line), "\r\n") == "" {
			c.done = true
			return nil
		}
	}
}

func noEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// isTimeout says whether err is a deadline that ran out.
func isTimeout(err error) bool {
	return errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, context.DeadlineExceeded)
}
