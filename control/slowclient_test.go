package control

import (
	"bufio"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// TestStalledLargeRequest: a client that sends part of a large request and
// stalls holds the large-request slot only while its bytes keep coming; a
// second large request is answered within the progress bound, not the idle
// limit, and the stalled client is told why it was dropped.
func TestStalledLargeRequest(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir)
	s.IdleTimeout = time.Minute
	s.ProgressTimeout, s.LargeTimeout = 300*time.Millisecond, 3*time.Second
	big := `{"v":2,"op":"info"` + strings.Repeat(" ", 4*SmallRequest) + `}`

	slow, err := net.Dial("unix", s.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	if _, err := io.WriteString(slow, big[:2*SmallRequest+4096]); err != nil { // well past SmallRequest, then nothing
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond) // the slow client takes the slot first
	start := time.Now()
	c, err := net.Dial("unix", s.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	resp := rawCall(t, c, bufio.NewReader(c), big)
	if resp.Error != "" || resp.Info == nil {
		t.Fatalf("second large request: %+v", resp)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("a second large request waited %v behind a stalled one (progress bound 300ms)", d)
	}
	slow.SetReadDeadline(time.Now().Add(5 * time.Second))
	line, _ := bufio.NewReader(slow).ReadString('\n')
	if !strings.Contains(line, "stalled") {
		t.Errorf("the stalled client was told %q", line)
	}

	// A client that trickles a large request (a byte every 100ms, far
	// slower than a buffer per ProgressTimeout) loses the slot soon.
	trickle, err := net.Dial("unix", s.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer trickle.Close()
	io.WriteString(trickle, big[:2*SmallRequest+1])
	done := make(chan string, 1)
	go func() {
		trickle.SetReadDeadline(time.Now().Add(10 * time.Second))
		l, _ := bufio.NewReader(trickle).ReadString('\n')
		done <- l
	}()
	start = time.Now()
	for i := 2*SmallRequest + 1; i < len(big)-1; i++ {
		if _, err := io.WriteString(trickle, big[i:i+1]); err != nil {
			break
		}
		select {
		case l := <-done:
			if !strings.Contains(l, "stalled") || time.Since(start) > 3*time.Second {
				t.Errorf("trickling client: %q after %v", l, time.Since(start))
			}
			return
		case <-time.After(100 * time.Millisecond):
		}
	}
	t.Errorf("a trickling client kept the large-request slot for %v", time.Since(start))
}

// TestReservedSlots: MaxConns idle connections do not keep a small request
// out: it is served on a reserved slot (a large one there is refused).
func TestReservedSlots(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir)
	s.IdleTimeout = time.Minute
	var idle []net.Conn
	for i := 0; i < MaxConns; i++ {
		c, err := net.Dial("unix", s.Path())
		if err != nil {
			t.Fatal(err)
		}
		idle = append(idle, c)
		io.WriteString(c, `{"op":`) // a request begun and never finished
	}
	defer func() {
		for _, c := range idle {
			c.Close()
		}
	}()
	time.Sleep(100 * time.Millisecond)
	start := time.Now()
	c, err := net.Dial("unix", s.Path())
	if err != nil {
		t.Fatal(err)
	}
	resp := rawCall(t, c, bufio.NewReader(c), `{"v":2,"op":"info"}`)
	c.Close()
	if resp.Error != "" || resp.Info == nil || time.Since(start) > 2*time.Second {
		t.Fatalf("small request with %d idle connections: %+v after %v", MaxConns, resp, time.Since(start))
	}
	c, err = net.Dial("unix", s.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	resp = rawCall(t, c, bufio.NewReader(c), `{"v":2,"op":"info"`+strings.Repeat(" ", 2*SmallRequest)+`}`)
	if !strings.Contains(resp.Error, "busy") {
		t.Errorf("large request on a reserved slot: %+v", resp)
	}
}
