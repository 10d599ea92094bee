package bundle

import (
	"testing"

	"github.com/ncclbpf/ncclbpf/policies"
)

// BenchmarkLoad loads embedded policies end to end: parse, verify,
// create maps, compile with the default engine.
func BenchmarkLoad(b *testing.B) {
	for _, name := range []string{"noop", "size_aware", "rules"} {
		obj, ok := policies.Object(name)
		if !ok {
			b.Fatalf("no embedded policy %q", name)
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				bl, err := Load(obj, Options{})
				if err != nil {
					b.Fatal(err)
				}
				bl.Close()
			}
		})
	}
}
