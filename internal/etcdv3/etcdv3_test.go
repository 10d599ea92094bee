package etcdv3

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ncclbpf/ncclbpf/control"
	"github.com/ncclbpf/ncclbpf/internal/storetest"
)

// TestEtcdClientAgainstEtcd: every call of the command line's etcd store
// (etcd's own client) against a real etcd, and a registration that lives
// on its process's lease; the keys and values are those the plugin's
// gateway client writes (both read each other's).
func TestEtcdClientAgainstEtcd(t *testing.T) {
	addr := storetest.StartEtcd(t)
	s, err := DialEtcd(addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	g, err := control.DialEtcdHTTP(addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if n, err := s.Add("v3/n", 2); err != nil || n != 2 {
		t.Fatalf("add: %d %v", n, err)
	}
	if n, err := g.Add("v3/n", 3); err != nil || n != 5 {
		t.Fatalf("add through the gateway after the client: %d %v", n, err)
	}
	if cur, err := s.CompareSet("v3/tx", nil, []byte("commit")); err != nil || string(cur) != "commit" {
		t.Fatalf("compare-set of a missing key: %q %v", cur, err)
	}
	if cur, err := g.CompareSet("v3/tx", nil, []byte("abort")); err != nil || string(cur) != "commit" {
		t.Fatalf("compare-set of a key set: %q %v", cur, err)
	}
	go func() {
		time.Sleep(100 * time.Millisecond)
		g.Set("v3/later", []byte("x"))
	}()
	if err := s.Wait(5*time.Second, "v3/later"); err != nil {
		t.Fatalf("wait: %v", err)
	}
	if v, ok, err := s.Get("v3/later"); err != nil || !ok || string(v) != "x" {
		t.Fatalf("get: %q %v %v", v, ok, err)
	}
	if err := s.Wait(200*time.Millisecond, "v3/never"); !errors.Is(err, control.ErrStoreTimeout) {
		t.Fatalf("wait for a key nobody sets: %v", err)
	}
	if ok, err := s.Delete("v3/later"); err != nil || !ok {
		t.Fatalf("delete: %v %v", ok, err)
	}
	p, err := DialEtcd(addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	for i, kv := range []control.Store{p, g} {
		env := map[string]string{"RANK": strconv.Itoa(i), "WORLD_SIZE": "2"}
		if _, err := control.Register(kv, "ncclbpf/v3/", func(k string) string { return env[k] }); err != nil {
			t.Fatal(err)
		}
	}
	if rs, err := control.StoreRanks(s, "ncclbpf/v3/", 0); err != nil || len(rs) != 2 {
		t.Fatalf("two live registrations: %v %v", rs, err)
	}
	p.Close() // rank 0 finished: its lease is revoked
	if _, err := control.StoreRanks(s, "ncclbpf/v3/", 0); err == nil || !strings.Contains(err.Error(), "rank 0: not registered") {
		t.Fatalf("after rank 0 finished: %v", err)
	}
}

// TestMailboxAcrossClients: a process served by either etcd client answers
// a coordinator on the other, request after request (numbers, answers and
// removals as both write them); nothing of the exchanges is left behind.
func TestMailboxAcrossClients(t *testing.T) {
	addr := storetest.StartEtcd(t)
	for _, v3serves := range []bool{true, false} {
		prefix := "ncclbpf/mix-" + strconv.FormatBool(v3serves) + "/"
		v3, err := DialEtcd(addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		gw, err := control.DialEtcdHTTP(addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		var server, client control.Store = gw, v3
		if v3serves {
			server, client = v3, gw
		}
		env := func(k string) string { return map[string]string{"RANK": "0", "WORLD_SIZE": "1"}[k] }
		reg, err := control.Register(server, prefix, env)
		if err != nil {
			t.Fatal(err)
		}
		stop := make(chan struct{})
		done := make(chan struct{})
		go func() {
			defer close(done)
			control.ServeStore(server, prefix, reg.Slot, func(req control.Payload) *control.Response {
				return &control.Response{Entries: []control.KV{{Key: req.(*control.MapDump).Map}}}
			}, stop, func(error) {})
		}()
		ranks, err := control.StoreRanks(client, prefix, 0)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 3; i++ {
			m := "m" + strconv.Itoa(i)
			resp, err := ranks[0].Call(&control.MapDump{Map: m}, 5*time.Second)
			if err != nil || len(resp.Entries) != 1 || resp.Entries[0].Key != m {
				t.Fatalf("v3 serves %v, call %d: %+v %v", v3serves, i, resp, err)
			}
		}
		close(stop)
		<-done
		client.Close() // the answers read are removed by now
		for _, k := range []string{"req/", "resp/"} {
			for i := 1; i <= 3; i++ {
				key := prefix + "mbox/" + strconv.FormatInt(reg.Slot, 10) + "/" + k + strconv.Itoa(i)
				if _, ok, err := server.Get(key); err != nil || ok {
					t.Errorf("v3 serves %v: %s left in the store (%v)", v3serves, key, err)
				}
			}
		}
		server.Close()
	}
}

// TestEtcdClientPostAll: the command line's batched requests against a
// real etcd: 130 postings to 65 mailboxes (two each, more than one
// transaction takes) get consecutive numbers per mailbox and their
// requests, also where the gateway client moved a counter meanwhile; an
// answer read is removed with the next batch; and a two-phase round over
// ranks served through the gateway commits, its requests batched.
func TestEtcdClientPostAll(t *testing.T) {
	addr := storetest.StartEtcd(t)
	s, err := DialEtcd(addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	g, err := control.DialEtcdHTTP(addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	const pre = "ncclbpf/v3postall/mbox/"
	if _, err := g.Add(pre+"3/next", 4); err != nil {
		t.Fatal(err)
	}
	g.Set(pre+"0/resp/9", []byte("answer"))
	if v, ok, err := s.Take(time.Second, pre+"0/resp/9", 0, true); err != nil || !ok || string(v) != "answer" {
		t.Fatalf("take: %q %v %v", v, ok, err)
	}
	var posts []control.Posting
	for i := 0; i < 130; i++ {
		box := pre + strconv.Itoa(i%65) + "/"
		posts = append(posts, control.Posting{Counter: box + "next", Prefix: box + "req/", Value: []byte("request " + strconv.Itoa(i))})
	}
	numbers := map[int]map[int64]bool{}
	for i, p := range s.PostAll(posts) {
		box := i % 65
		if p.Err != nil || p.Rev <= 0 {
			t.Fatalf("posting %d: %+v", i, p)
		}
		if numbers[box] == nil {
			numbers[box] = map[int64]bool{}
		}
		numbers[box][p.K] = true
		key := pre + strconv.Itoa(box) + "/req/" + strconv.FormatInt(p.K, 10)
		if v, ok, err := g.Get(key); err != nil || !ok || string(v) != "request "+strconv.Itoa(i) {
			t.Fatalf("posting %d: %s holds %q %v %v", i, key, v, ok, err)
		}
	}
	for box, ns := range numbers {
		first := int64(1)
		if box == 3 {
			first = 5
		}
		if len(ns) != 2 || !ns[first] || !ns[first+1] {
			t.Fatalf("mailbox %d: numbers %v, want %d and %d", box, ns, first, first+1)
		}
	}
	if _, ok, _ := g.Get(pre + "0/resp/9"); ok {
		t.Fatal("the answer read was not removed with the batch")
	}

	const job = "ncclbpf/v3round/"
	stop := make(chan struct{})
	defer close(stop)
	for i := 0; i < 3; i++ {
		server, err := control.DialEtcdHTTP(addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer server.Close()
		env := map[string]string{"RANK": strconv.Itoa(i), "WORLD_SIZE": "3"}
		reg, err := control.Register(server, job, func(k string) string { return env[k] })
		if err != nil {
			t.Fatal(err)
		}
		state := control.TxPrepared
		go control.ServeStore(server, job, reg.Slot, func(req control.Payload) *control.Response {
			if req.Op() == control.OpCommit {
				state = control.TxCommitted
			}
			return &control.Response{Tx: &control.TxResult{State: state}}
		}, stop, func(error) {})
	}
	ranks, err := control.StoreRanks(s, job, 0)
	if err != nil {
		t.Fatal(err)
	}
	n := uint64(10)
	if res := control.TwoPhase(ranks, &control.Prepare{Map: "agreed", Entries: []control.KV{{Key: "00", Value: "01"}}, AtSeq: &n}, control.SwitchOptions{Timeout: 5 * time.Second}); !res.Committed {
		t.Fatalf("a round coordinated by the command line's client: %+v", res)
	}
}

// TestEtcdClientPostRemovingOldRequest: as control's
// TestEtcdPostRemovingOldRequest, for the command line's client: a fresh
// client guesses a mailbox's counter low while it carries the removal of
// the old request its guess names; the post lands as the next number.
func TestEtcdClientPostRemovingOldRequest(t *testing.T) {
	addr := storetest.StartEtcd(t)
	g, err := control.DialEtcdHTTP(addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	const box = "ncclbpf/v3stale/mbox/0/"
	if _, _, err := g.Post(box+"next", box+"req/", []byte("old")); err != nil { // req/1
		t.Fatal(err)
	}
	g.Set(box+"resp/1", []byte("answer"))
	s, err := DialEtcd(addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, ok, err := s.Take(time.Second, box+"resp/1", 0, true); err != nil || !ok {
		t.Fatalf("take: %v %v", ok, err)
	}
	s.RemoveLater(box + "req/1") // the request answered, as the coordinator removes it
	p := s.PostAll([]control.Posting{{Counter: box + "next", Prefix: box + "req/", Value: []byte("new")}})[0]
	if p.Err != nil || p.K != 2 {
		t.Fatalf("PostAll: %+v; want number 2", p)
	}
	s.flushDrops()
	if v, ok, err := g.Get(box + "req/2"); err != nil || !ok || string(v) != "new" {
		t.Errorf("req/2 holds %q %v %v", v, ok, err)
	}
	if _, ok, err := g.Get(box + "req/1"); err != nil || ok {
		t.Errorf("the old request is still there (%v)", err)
	}
}
