package control

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func echoHandler(req Payload) *Response {
	switch req := req.(type) {
	case *InfoQuery:
		return &Response{Info: &Info{PID: os.Getpid(), Policy: "test"}}
	case *MapDump:
		if req.Map == "panic" {
			panic("handler bug")
		}
	}
	return &Response{}
}

func startServer(t *testing.T, dir string) *Server {
	t.Helper()
	s, err := Listen(dir, os.Getpid(), echoHandler)
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve()
	t.Cleanup(func() { s.Close() })
	return s
}

// rawCall writes line (a newline is added) and reads one response line.
func rawCall(t *testing.T, c net.Conn, r *bufio.Reader, line string) Response {
	t.Helper()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, line+"\n"); err != nil {
		t.Fatalf("write: %v", err)
	}
	b, err := r.ReadBytes('\n')
	if err != nil {
		t.Fatalf("read after %q: %v", line, err)
	}
	var resp Response
	if err := json.Unmarshal(b, &resp); err != nil {
		t.Fatalf("bad response %q: %v", b, err)
	}
	return resp
}

func TestMalformedRequests(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir)
	c, err := net.Dial("unix", s.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReader(c)
	for _, tc := range []struct{ line, want string }{
		{``, "empty line"},
		{`   `, "empty line"},
		{`not json`, "bad request"},
		{`{"op":`, "bad request"},
		{`[1,2]`, "bad request"},
		{`"info"`, "bad request"},
		{`{"v":2}`, `no "op"`},
		{`{"v":2,"op":"frobnicate"}`, `unknown op "frobnicate" (have: abort, agreed_update,`},
		{`{"v":2,"op":"info","args":{"bogus":1}}`, "unknown field"},
		{`{"v":2,"op":"info"} {"v":2,"op":"info"}`, "data after"},
		{`{"v":2,"op":7}`, "bad request"},
		{`{"v":2,"op":"map_dump"}`, `needs "map"`},
		{`{"v":2,"op":"map_update","args":{"map":"m","key":"00"}}`, `needs "map", and "key" and "value" (hex) or "args"`},
		{`{"v":2,"op":"map_update","args":{"map":"m","key":"00","args":["1","2"]}}`, `takes "args" or "key" and "value", not both`},
		{`{"v":2,"op":"map_lookup","args":{"map":"m"}}`, `map_lookup needs "map" and "args" (the key)`},
		{`{"v":2,"op":"map_delete","args":{"map":"m"}}`, `map_delete needs "map" and "args" (the key)`},
		{`{"v":2,"op":"reload"}`, `needs "object"`},
		{`{"v":2,"op":"reload","args":{"object":"!!notbase64"}}`, "bad request"},
		{`{"v":2,"op":"reload","args":{"object":"AAAA","at_seq":-1}}`, "bad request"},
		{`{"v":2,"op":"rollback","args":{"timeout_ms":-5}}`, "timeout_ms must be within"},
		{`{"v":2,"op":"stats","args":{"timeout_ms":5}}`, `stats args: json: unknown field "timeout_ms" (stats takes: sample_ms)`},
		{`{"v":2,"op":"map_dump","args":{"map":"m","key":"00"}}`, `map_dump args: json: unknown field "key" (map_dump takes: map)`},
		{`{"v":2,"op":"commit","args":{"tx":"t","object":"AA=="}}`, `unknown field "object"`},
		{`{"v":2,"op":"info","map":"m"}`, `unknown field "map"`},
		{`{"op":"info"}`, "protocol version 1 (no \"v\"); this process speaks protocol version 2"},
		{`{"op":"map_dump","map":"m"}`, "protocol version 1"},
		{`{"v":3,"op":"info"}`, "protocol version 3;"},
		{`{"v":2,"op":"reload","args":{"object":"AA==","timeout_ms":3600001}}`, "timeout_ms must be within"},
		{`{"v":2,"op":"cancel","args":{"bogus":1}}`, "unknown field"},
		{`{"v":2,"op":"stats","args":{"sample_ms":-1}}`, "sample_ms"},
		{`{"v":2,"op":"stats","args":{"sample_ms":600000}}`, "sample_ms"},
		{`{"v":2,"op":"map_dump","args":{"map":"panic"}}`, "internal error: handler bug"},
		{"{\"op\":\"info\"}\x00", "bad request"},
	} {
		resp := rawCall(t, c, r, tc.line)
		if resp.OK || !strings.Contains(resp.Error, tc.want) {
			t.Errorf("%q: got ok=%v error %q, want an error containing %q", tc.line, resp.OK, resp.Error, tc.want)
		}
	}
	// The same connection still serves good requests after all that.
	if resp := rawCall(t, c, r, `{"v":2,"op":"info"}`); !resp.OK || resp.Info == nil || resp.Info.Policy != "test" {
		t.Fatalf("good request after bad ones: %+v", resp)
	}
}

func TestOversizedRequestGetsErrorAndServerLivesOn(t *testing.T) {
	s := startServer(t, t.TempDir())
	c, err := net.Dial("unix", s.Path())
	if err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(c)
	big := `{"v":2,"op":"reload","args":{"object":"` + strings.Repeat("A", MaxRequest) + `"}}`
	go func() { io.WriteString(c, big+"\n") }()
	c.SetDeadline(time.Now().Add(20 * time.Second))
	b, err := r.ReadBytes('\n')
	if err != nil {
		t.Fatalf("no answer to an oversized request: %v", err)
	}
	var resp Response
	json.Unmarshal(b, &resp)
	if resp.OK || !strings.Contains(resp.Error, "longer than") {
		t.Fatalf("oversized: %+v", resp)
	}
	c.Close()
	// A new client is served.
	cl, err := Dial(s.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := cl.Call(&InfoQuery{}); err != nil {
		t.Fatalf("after an oversized request: %v", err)
	}
}

func TestUnterminatedRequestAndIdleTimeout(t *testing.T) {
	s := startServer(t, t.TempDir())
	s.IdleTimeout = 200 * time.Millisecond
	c, err := net.Dial("unix", s.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, `{"v":2,"op":"info"`) // never finished
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := bufio.NewReader(c).ReadBytes('\n'); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("the server kept an idle half-request open: %v", err)
	}
}

func TestPeerCheckRefuses(t *testing.T) {
	s := startServer(t, t.TempDir())
	s.SetPeerCheck(func(uid uint32) error { return fmt.Errorf("permission denied: uid %d refused by test", uid) })
	cl, err := Dial(s.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	_, err = cl.Call(&InfoQuery{})
	if !errors.Is(err, ErrPermission) {
		t.Fatalf("got %v, want ErrPermission", err)
	}
	if n := strings.Count(err.Error(), "permission denied"); n != 1 {
		t.Fatalf("%q says \"permission denied\" %d times, want once", err, n)
	}
}

func TestSocketAndDirPermissions(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ctl")
	s := startServer(t, dir)
	fi, err := os.Stat(dir)
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("dir mode %v, %v; want 0700", fi.Mode().Perm(), err)
	}
	fi, err = os.Stat(s.Path())
	if err != nil || fi.Mode().Perm() != 0o600 || fi.Mode()&os.ModeSocket == 0 {
		t.Fatalf("socket mode %v, %v; want 0600 socket", fi.Mode(), err)
	}
	es, err := Scan(dir)
	if err != nil || len(es) != 1 || es[0].PID != os.Getpid() {
		t.Fatalf("Scan = %v, %v", es, err)
	}
}

func TestStaleSocket(t *testing.T) {
	dir := t.TempDir()
	path := SocketPath(dir, 999999)
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	ln.SetUnlinkOnClose(false)
	ln.Close() // the file stays, nobody listens: a dead process's socket
	if _, err := Dial(path); !errors.Is(err, ErrStale) {
		t.Fatalf("dial stale: %v, want ErrStale", err)
	}
	if _, err := DialPID(dir, 424242); !errors.Is(err, ErrNoProcess) {
		t.Fatalf("dial missing: %v, want ErrNoProcess", err)
	}
	// A server for that pid replaces the stale socket.
	s, err := Listen(dir, 999999, echoHandler)
	if err != nil {
		t.Fatalf("listen over a stale socket: %v", err)
	}
	s.Close()
}

// TestOtherUIDRefused connects for real from another uid (nobody), as a
// child process; the socket and directory are opened up for the test so
// that only the SO_PEERCRED check stands in the way.
func TestOtherUIDRefused(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to run a child as another uid")
	}
	base, err := os.MkdirTemp("", "ncclbpf-ctl-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(base)
	os.Chmod(base, 0o755)
	dir := filepath.Join(base, "ctl")
	s := startServer(t, dir)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(base, "ctl.test")
	data, err := os.ReadFile(exe)
	if err != nil || os.WriteFile(bin, data, 0o755) != nil {
		t.Fatalf("copy test binary: %v", err)
	}
	run := func() string {
		cmd := exec.Command(bin, "-test.run=^TestHelperDial$")
		cmd.Env = []string{"NCCLBPF_HELPER_SOCK=" + s.Path()}
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		out, _ := cmd.CombinedOutput()
		return string(out)
	}
	// With the owner-only permissions, the file system refuses first.
	if out := run(); !strings.Contains(out, "RESULT permission denied") {
		t.Fatalf("uid 65534 with 0700/0600: %s", out)
	}
	os.Chmod(dir, 0o755)
	os.Chmod(s.Path(), 0o777)
	out := run()
	if !strings.Contains(out, "RESULT server: permission denied: peer uid 65534") {
		t.Fatalf("uid 65534 through an open socket: %s", out)
	}
}

// TestHelperDial is the child of TestOtherUIDRefused.
func TestHelperDial(t *testing.T) {
	path := os.Getenv("NCCLBPF_HELPER_SOCK")
	if path == "" {
		t.Skip("helper")
	}
	cl, err := Dial(path)
	if err != nil {
		if errors.Is(err, ErrPermission) {
			fmt.Println("RESULT permission denied (dial)")
		} else {
			fmt.Println("RESULT dial:", err)
		}
		return
	}
	defer cl.Close()
	resp, err := cl.Call(&InfoQuery{})
	if err != nil {
		if resp == nil {
			fmt.Println("RESULT call:", err)
			return
		}
		fmt.Println("RESULT server:", resp.Error)
		return
	}
	fmt.Println("RESULT served", resp.Info)
}

func FuzzParseRequest(f *testing.F) {
	for _, s := range []string{`{"v":2,"op":"info"}`, `{"v":2,"op":"map_update","args":{"map":"m","key":"00","value":"01"}}`,
		`{"v":2,"op":"reload","args":{"object":"AAAA","at_seq":5}}`, `{`, ``} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		req, err := ParseRequest(line)
		if (req == nil) == (err == nil) {
			t.Fatalf("ParseRequest(%q) = %v, %v", line, req, err)
		}
	})
}
