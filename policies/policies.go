// Package policies holds the example policies shipped with ncclbpf: their C
// sources (*.bpf.c, built by scripts/build-bpf.sh with clang-19) and
// the committed objects, embedded here so that the plugin and the CLI can
// use them without a compiler ("builtin:NAME").
//
//   - noop: leaves every decision to NCCL (the plugin's default policy);
//   - size_aware: Ring/Simple for mid-size AllReduce on one node, at most 8 ranks;
//   - rules: NCCL's example CSV tuner format, at a cost that does not grow with the number of rules.
package policies

import (
	_ "embed"
	"sort"
)

var (
	//go:embed noop.bpf.o
	noop []byte
	//go:embed size_aware.bpf.o
	sizeAware []byte
	//go:embed rules.bpf.o
	rules []byte
)

var builtin = map[string][]byte{"noop": noop, "size_aware": sizeAware, "rules": rules}

// Object returns the embedded object of the policy called name.
func Object(name string) ([]byte, bool) {
	b, ok := builtin[name]
	return b, ok
}

// Names lists the embedded policies.
func Names() []string {
	n := make([]string, 0, len(builtin))
	for k := range builtin {
		n = append(n, k)
	}
	sort.Strings(n)
	return n
}
