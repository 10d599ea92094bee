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
