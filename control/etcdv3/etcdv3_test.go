package etcdv3

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ncclbpf/ncclbpf/control"
	"github.com/ncclbpf/ncclbpf/control/storetest"
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
			control.ServeStore(server, prefix, reg.Slot, func(req *control.Request) *control.Response {
				return &control.Response{Entries: []control.KV{{Key: req.Map}}}
			}, stop, func(error) {})
		}()
		ranks, err := control.StoreRanks(client, prefix, 0)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 3; i++ {
			m := "m" + strconv.Itoa(i)
			resp, err := ranks[0].Call(&control.Request{Op: control.OpMaps, Map: m}, 5*time.Second)
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
