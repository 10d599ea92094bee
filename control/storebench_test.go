package control

import (
	"fmt"
	"strconv"
	"testing"
	"time"
)

// BenchmarkTwoPhase64: one two-phase agreement (prepare, the decision
// recorded by compare-set, commit) over 64 simulated processes, each with
// its own connection to a real store, serving its mailbox with ServeStore
// (BENCHMARKS.md, "Two-phase switching through the job's store"). Beside
// the round's time it reports each phase's, and on etcd the writes a round
// makes (the store's revisions).
func BenchmarkTwoPhase64(b *testing.B) {
	for _, k := range storeKinds {
		b.Run(k.name, func(b *testing.B) {
			dial := k.dial(b)
			prefix := fmt.Sprintf("ncclbpf/bench-%s-%d/", k.name, time.Now().UnixNano())
			simJob(b, dial, prefix, 64)
			kv, err := dial()
			if err != nil {
				b.Fatal(err)
			}
			defer kv.Close()
			ranks, err := StoreRanks(kv, prefix, 0)
			if err != nil {
				b.Fatal(err)
			}
			revision := func() int64 {
				e, ok := kv.(*EtcdHTTP)
				if !ok {
					return 0
				}
				_, r, err := e.rangeKey(prefix)
				if err != nil {
					b.Fatal(err)
				}
				n, _ := strconv.ParseInt(r, 10, 64)
				return n
			}
			o := SwitchOptions{Timeout: 10 * time.Second, Decide: StoreDecider(kv, prefix)}
			var prepare, commit time.Duration
			rev0 := revision()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				n := uint64(1000 + i)
				res := TwoPhase(ranks, &Prepare{Map: "agreed", Entries: []KV{{Key: "00", Value: "01"}}, AtSeq: &n}, o)
				if !res.Committed {
					b.Fatalf("round %d: %s", i, res.Reason)
				}
				prepare += time.Duration(res.PrepareNS)
				commit += time.Duration(res.CommitNS)
			}
			b.StopTimer()
			b.ReportMetric(float64(prepare.Microseconds())/1e3/float64(b.N), "prepare-ms/op")
			b.ReportMetric(float64(commit.Microseconds())/1e3/float64(b.N), "commit-ms/op")
			if rev := revision(); rev > 0 {
				b.ReportMetric(float64(rev-rev0)/float64(b.N), "writes/op")
			}
		})
	}
}
