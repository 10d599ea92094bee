package control

import (
	"bufio"
	"context"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestHTTP1: answers with a length, in chunks (with an extension and a
// trailer) and up to the connection's end; a kept-alive connection the
// server closed in between is replaced without an error; a server that
// does not answer is a timeout.
func TestHTTP1(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	answers := []string{
		"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3;x=y\r\nabc\r\n2\r\nde\r\n0\r\nX-T: 1\r\n\r\n",
		"close", // the server closes the kept-alive connection: the request goes again
		"HTTP/1.1 404 Not Found\r\nConnection: close\r\n\r\n{\"message\":\"no\"}",
		"hang",
	}
	go func() {
		i := 0
		for i < len(answers) {
			c, err := l.Accept()
			if err != nil {
				return
			}
			r := bufio.NewReader(c)
			for i < len(answers) {
				// one request: its head, then Content-Length bytes
				n := 0
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						c.Close()
						goto next
					}
					if v, ok := strings.CutPrefix(line, "Content-Length: "); ok {
						n, _ = strconv.Atoi(strings.TrimSpace(v))
					}
					if line == "\r\n" {
						break
					}
				}
				io.CopyN(io.Discard, r, int64(n))
				a := answers[i]
				i++
				switch a {
				case "close":
					c.Close()
					goto next
				case "hang":
					time.Sleep(2 * time.Second)
					c.Close()
					return
				}
				c.Write([]byte(a))
				if strings.Contains(a, "Connection: close") {
					c.Close()
					goto next
				}
			}
		next:
		}
	}()
	h := &http1{addr: l.Addr().String()}
	get := func() (int, string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		defer cancel()
		r, done, err := h.do(ctx, "/p", []byte(`{}`))
		if err != nil {
			return 0, "", err
		}
		defer done()
		b, err := h.readAll(r)
		return r.status, string(b), err
	}
	for _, want := range []string{"200 hello", "200 abcde", "404 {\"message\":\"no\"}"} {
		code, body, err := get()
		if err != nil || strconv.Itoa(code)+" "+body != want {
			t.Fatalf("got %d %q %v; want %s", code, body, err, want)
		}
	}
	t0 := time.Now()
	if _, _, err := get(); err == nil || !isTimeout(err) || time.Since(t0) > 1500*time.Millisecond {
		t.Fatalf("a server that does not answer: %v after %v", err, time.Since(t0))
	}
}
