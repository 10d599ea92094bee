package control

import (
	"errors"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// freePort returns a TCP port of 127.0.0.1 that nothing listens on.
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startEtcd starts a real etcd server (Debian's etcd-server) with its data
// in a temporary directory and returns its client address; the test skips,
// with one line, only when the binary is missing (scripts/setup.sh installs
// it).
func startEtcd(t testing.TB) string {
	t.Helper()
	bin, err := exec.LookPath("etcd")
	if err != nil {
		t.Skip("no etcd binary (Debian: apt-get install etcd-server; scripts/setup.sh does)")
	}
	client := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	peer := fmt.Sprintf("http://127.0.0.1:%d", freePort(t))
	cmd := exec.Command(bin, "--data-dir", filepath.Join(t.TempDir(), "etcd"), "--name", "test",
		"--listen-client-urls", "http://"+client, "--advertise-client-urls", "http://"+client,
		"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
		"--initial-cluster", "test="+peer, "--log-level", "error")
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		s, err := DialEtcdHTTP(client, 500*time.Millisecond)
		if err == nil {
			s.Close()
			return client
		}
		if time.Now().After(deadline) {
			t.Fatalf("etcd did not answer at %s: %v\n%s", client, err, out.String())
		}
	}
}

// storeSemantics checks what the control plane needs of a store.
func storeSemantics(t *testing.T, s, other Store) {
	if _, ok, err := s.Get("sem/missing"); err != nil || ok {
		t.Fatalf("get missing: %v %v", ok, err)
	}
	if err := s.Set("sem/a", []byte("1")); err != nil {
		t.Fatal(err)
	}
	if v, ok, err := s.Get("sem/a"); err != nil || !ok || string(v) != "1" {
		t.Fatalf("get: %q %v %v", v, ok, err)
	}
	if n, err := s.Add("sem/n", 3); err != nil || n != 3 {
		t.Fatalf("add: %d %v", n, err)
	}
	if n, err := s.Add("sem/n", -1); err != nil || n != 2 {
		t.Fatalf("add: %d %v", n, err)
	}
	if n, err := s.Add("sem/n", 0); err != nil || n != 2 {
		t.Fatalf("add 0: %d %v", n, err)
	}
	if cur, err := s.CompareSet("sem/tx", nil, []byte("commit")); err != nil || string(cur) != "commit" {
		t.Fatalf("compare-set of a missing key: %q %v", cur, err)
	}
	if cur, err := s.CompareSet("sem/tx", nil, []byte("abort")); err != nil || string(cur) != "commit" {
		t.Fatalf("compare-set of a key already set: %q %v (the first decision must stand)", cur, err)
	}
	if cur, err := s.CompareSet("sem/a", []byte("1"), []byte("2")); err != nil || string(cur) != "2" {
		t.Fatalf("compare-set that matches: %q %v", cur, err)
	}
	if ok, err := s.Delete("sem/a"); err != nil || !ok {
		t.Fatalf("delete: %v %v", ok, err)
	}
	if ok, err := s.Delete("sem/a"); err != nil || ok {
		t.Fatalf("delete again: %v %v", ok, err)
	}
	go func() {
		time.Sleep(100 * time.Millisecond)
		other.Set("sem/later", []byte("x"))
	}()
	if err := s.Wait(5*time.Second, "sem/later"); err != nil {
		t.Fatalf("wait: %v", err)
	}
	t0 := time.Now()
	if err := s.Wait(200*time.Millisecond, "sem/never"); !errors.Is(err, ErrStoreTimeout) || time.Since(t0) > 2*time.Second {
		t.Fatalf("wait for a key nobody sets: %v after %v", err, time.Since(t0))
	}
	// Concurrent adds from two clients: none lost.
	done := make(chan error, 2)
	for _, c := range []Store{s, other} {
		go func() {
			for i := 0; i < 50; i++ {
				if _, err := c.Add("sem/race", 1); err != nil {
					done <- err
					return
				}
			}
			done <- nil
		}()
	}
	for i := 0; i < 2; i++ {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	if n, _ := s.Add("sem/race", 0); n != 100 {
		t.Fatalf("100 concurrent adds gave %d", n)
	}
}

// TestEtcdHTTPAgainstEtcd: every call of the plugin's etcd store (the
// JSON gateway) against a real etcd; a registration lives on the process's lease and is gone once the
// lease is (the client closed, as a finished process's is); a store that
// is down is an error at once.
func TestEtcdHTTPAgainstEtcd(t *testing.T) {
	addr := startEtcd(t)
	s, err := DialEtcdHTTP(addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	o, err := DialEtcdHTTP(addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	storeSemantics(t, s, o)

	env := func(k string) string { return map[string]string{"RANK": "0", "WORLD_SIZE": "2"}[k] }
	p, err := DialEtcdHTTP(addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Register(p, "ncclbpf/lease/", env); err != nil {
		t.Fatal(err)
	}
	env1 := func(k string) string { return map[string]string{"RANK": "1", "WORLD_SIZE": "2"}[k] }
	if _, err := Register(o, "ncclbpf/lease/", env1); err != nil {
		t.Fatal(err)
	}
	if rs, err := StoreRanks(s, "ncclbpf/lease/", 0); err != nil || len(rs) != 2 {
		t.Fatalf("two live registrations: %v %v", rs, err)
	}
	p.Close() // the process finished
	_, err = StoreRanks(s, "ncclbpf/lease/", 0)
	if err == nil || !strings.Contains(err.Error(), "rank 0: not registered") {
		t.Fatalf("after rank 0 finished: %v; want rank 0 named missing", err)
	}

	if _, err := DialEtcdHTTP(fmt.Sprintf("127.0.0.1:%d", freePort(t)), 300*time.Millisecond); err == nil {
		t.Fatal("no error from a store that is down")
	}
}

// TestPackPostings: the transactions of PostAll stay within etcd's limit
// of operations, hold no counter twice, and carry every posting and every
// removal once.
func TestPackPostings(t *testing.T) {
	var posts []Posting
	for i := 0; i < 150; i++ {
		posts = append(posts, Posting{Counter: fmt.Sprintf("mbox/%d/next", i%140), Prefix: fmt.Sprintf("mbox/%d/req/", i%140)})
	}
	var drops []string
	for i := 0; i < 100; i++ {
		drops = append(drops, fmt.Sprintf("mbox/%d/resp/1", i%90))
	}
	chunks := PackPostings(posts, drops)
	seenPost := map[int]int{}
	seenDrop := map[string]int{}
	for n, c := range chunks {
		if ops := 2*len(c.Posts) + len(c.Drops); ops > maxTxnOps || ops == 0 {
			t.Fatalf("transaction %d: %d operations (etcd takes 1 to %d)", n, ops, maxTxnOps)
		}
		counters := map[string]bool{}
		for _, i := range c.Posts {
			if counters[posts[i].Counter] {
				t.Fatalf("transaction %d: counter %s twice", n, posts[i].Counter)
			}
			counters[posts[i].Counter] = true
			seenPost[i]++
		}
		for _, d := range c.Drops {
			seenDrop[d]++
		}
	}
	for i := range posts {
		if seenPost[i] != 1 {
			t.Fatalf("posting %d sent %d times", i, seenPost[i])
		}
	}
	if len(seenDrop) != 90 {
		t.Fatalf("%d distinct removals sent, want 90", len(seenDrop))
	}
	if len(chunks) != 4 {
		t.Fatalf("%d transactions for 150 postings and 90 removals, want 4 (300+90 operations, 128 each)", len(chunks))
	}
}

// TestEtcdPostAll: PostAll against a real etcd: 150 postings to 140
// mailboxes (ten of them twice, more than one transaction can take) get
// consecutive numbers per mailbox (in either order where two go to one)
// and their requests, also where another
// client moved a counter since this one last saw it; the answers read
// before are removed with them.
func TestEtcdPostAll(t *testing.T) {
	addr := startEtcd(t)
	s, err := DialEtcdHTTP(addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	o, err := DialEtcdHTTP(addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	const pre = "ncclbpf/postall/mbox/"
	if _, _, err := s.Post(pre+"3/next", pre+"3/req/", []byte("first")); err != nil {
		t.Fatal(err)
	}
	if _, err := o.Add(pre+"3/next", 5); err != nil { // another client took 2..6
		t.Fatal(err)
	}
	s.Set(pre+"0/resp/9", []byte("read"))
	s.mu.Lock()
	s.drop = append(s.drop, pre+"0/resp/9")
	s.mu.Unlock()
	var posts []Posting
	for i := 0; i < 150; i++ {
		box := fmt.Sprintf("%s%d/", pre, i%140)
		posts = append(posts, Posting{Counter: box + "next", Prefix: box + "req/", Value: []byte(fmt.Sprintf("request %d", i))})
	}
	got := s.PostAll(posts)
	numbers := map[int]map[int64]bool{} // per mailbox
	for i, p := range got {
		if p.Err != nil || p.Rev <= 0 {
			t.Fatalf("posting %d: %+v", i, p)
		}
		box := i % 140
		if numbers[box] == nil {
			numbers[box] = map[int64]bool{}
		}
		numbers[box][p.K] = true
		v, ok, err := o.Get(fmt.Sprintf("%s%d/req/%d", pre, box, p.K))
		if err != nil || !ok || string(v) != fmt.Sprintf("request %d", i) {
			t.Fatalf("posting %d: request %d %q %v %v", i, p.K, v, ok, err)
		}
	}
	for box, ns := range numbers {
		first := int64(1)
		if box == 3 {
			first = 7
		}
		for k := first; k < first+int64(len(ns)); k++ {
			if !ns[k] {
				t.Fatalf("mailbox %d: numbers %v, want %d..%d", box, ns, first, first+int64(len(ns))-1)
			}
		}
		if box < 10 && len(ns) != 2 {
			t.Fatalf("mailbox %d: numbers %v, want two", box, ns)
		}
	}
	if n, err := o.Add(pre+"3/next", 0); err != nil || n != 8 {
		t.Fatalf("counter of mailbox 3: %d %v, want 8", n, err)
	}
	if _, ok, _ := o.Get(pre + "0/resp/9"); ok {
		t.Fatal("an answer read was not removed with the postings")
	}
}

// TestEtcdPostRemovingOldRequest: a client that has not seen a mailbox's
// counter guesses it low; when it also carries the removal of an old
// request of that mailbox, its first guess names that very request. etcd
// refuses a transaction that touches one key twice, so the removal must be
// left out of that attempt, and the post must still land, as the next
// number, with the old request removed.
func TestEtcdPostRemovingOldRequest(t *testing.T) {
	addr := startEtcd(t)
	o, err := DialEtcdHTTP(addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	const pre = "ncclbpf/stalepost/mbox/"
	for _, all := range []bool{false, true} {
		box := fmt.Sprintf("%s%v/", pre, all)
		if _, _, err := o.Post(box+"next", box+"req/", []byte("old")); err != nil { // req/1
			t.Fatal(err)
		}
		s, err := DialEtcdHTTP(addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		s.mu.Lock()
		s.drop = append(s.drop, box+"resp/1", box+"req/1") // as Take leaves them
		s.mu.Unlock()
		var k int64
		if all {
			p := s.PostAll([]Posting{{Counter: box + "next", Prefix: box + "req/", Value: []byte("new")}})[0]
			k, err = p.K, p.Err
		} else {
			k, _, err = s.Post(box+"next", box+"req/", []byte("new"))
		}
		s.flushDrops()
		s.Close()
		if err != nil || k != 2 {
			t.Fatalf("PostAll %v: number %d, %v; want 2", all, k, err)
		}
		if v, ok, err := o.Get(box + "req/2"); err != nil || !ok || string(v) != "new" {
			t.Errorf("PostAll %v: req/2 holds %q %v %v", all, v, ok, err)
		}
		if _, ok, err := o.Get(box + "req/1"); err != nil || ok {
			t.Errorf("PostAll %v: the old request is still there (%v)", all, err)
		}
	}
}
