package control

import (
	"fmt"
	"testing"
	"time"
)

// BenchmarkTwoPhase64: one two-phase agreement (prepare, the decision
// recorded by compare-set, commit) over 64 simulated processes, each with
// its own connection to a real store, serving its mailbox with ServeStore
// (BENCHMARKS.md, "Two-phase switching through the job's store").
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
			o := SwitchOptions{Timeout: 10 * time.Second, Decide: StoreDecider(kv, prefix)}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				n := uint64(1000 + i)
				res := TwoPhase(ranks, &Request{Map: "agreed", Entries: []KV{{Key: "00", Value: "01"}}, AtSeq: &n}, o)
				if !res.Committed {
					b.Fatalf("round %d: %s", i, res.Reason)
				}
			}
		})
	}
}
