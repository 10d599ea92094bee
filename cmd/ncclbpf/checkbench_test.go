package main

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ncclbpf/ncclbpf/control"
	"github.com/ncclbpf/ncclbpf/internal/storetest"
)

// simRanks registers n simulated processes of one job in the etcd at
// addr, each with its own connection (the plugin's etcd client), serving
// its mailbox with the real ServeStore: every one reports one
// communicator of n ranks, with the environment digest env(i).
func simRanks(b testing.TB, addr, job string, n int, env func(i int) uint64) {
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		kv, err := control.DialEtcdHTTP(addr, 5*time.Second)
		if err != nil {
			b.Fatal(err)
		}
		vars := map[string]string{"RANK": strconv.Itoa(i), "WORLD_SIZE": strconv.Itoa(n)}
		reg, err := control.Register(kv, control.JobPrefix(job, nil), func(k string) string { return vars[k] })
		if err != nil {
			b.Fatal(err)
		}
		// Two whole blocks of calls drained, alike on every rank.
		view := control.LedgerView{CommID: 0x5e5e, NRanks: uint32(n), Through: 2*control.BlockCalls - 1, EnvDigest: env(i),
			Blocks: []control.Block{{From: 0, Sum: 7}, {From: control.BlockCalls, Sum: 9}}}
		h := func(req control.Payload) *control.Response {
			if _, ok := req.(*control.LedgerQuery); ok {
				return &control.Response{Ledger: []control.LedgerView{view}}
			}
			return &control.Response{Error: "unexpected " + req.Op()}
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			control.ServeStore(kv, control.JobPrefix(job, nil), reg.Slot, h, stop, func(error) {})
			kv.Close()
		}()
	}
	b.Cleanup(func() { close(stop); wg.Wait() })
}

// BenchmarkCheck64: `ncclbpf check --store etcd://...` over 64 simulated
// ranks of one job, which agree over two blocks of calls (BENCHMARKS.md, "check of 64 ranks through the job's
// store"): the whole command, from the store's connection to the verdict.
func BenchmarkCheck64(b *testing.B) {
	addr := storetest.StartEtcd(b)
	job := fmt.Sprintf("bench-check-%d", time.Now().UnixNano())
	simRanks(b, addr, job, 64, func(int) uint64 { return 0x1111 })
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		code, out, errs := ctlCLI("check", "--store", "etcd://"+addr, "--job", job)
		if code != 0 || !strings.Contains(out, "5e5e") {
			b.Fatalf("check: exit %d\n%s%s", code, out, errs)
		}
	}
}

// TestCheckThroughStore64: check over 64 ranks through etcd passes when
// they agree and fails, naming the rank, when one's environment differs.
func TestCheckThroughStore64(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd and 64 simulated ranks")
	}
	addr := storetest.StartEtcd(t)
	simRanks(t, addr, "agree64", 64, func(int) uint64 { return 0x1111 })
	if code, out, errs := ctlCLI("check", "--store", "etcd://"+addr, "--job", "agree64"); code != 0 {
		t.Fatalf("64 alike ranks: exit %d\n%s%s", code, out, errs)
	}
	simRanks(t, addr, "differ64", 64, func(i int) uint64 { return 0x1111 + uint64(i/63) })
	code, out, errs := ctlCLI("check", "--store", "etcd://"+addr, "--job", "differ64")
	if code != 1 || !strings.Contains(out, "ENVIRONMENT DIFFERS") || !strings.Contains(out, "rank 63 ") {
		t.Fatalf("rank 63's environment differs: exit %d\n%s%s", code, out, errs)
	}
}
