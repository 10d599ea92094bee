// Command mutations proves that the verifier's soundness rules are each
// guarded by a test: it removes one rule at a time from the source (an
// exact text replacement), runs the verifier's corpus, red-team and
// pointer-oracle tests, and requires them to fail; the source is restored
// after each. It exits 1 when a mutation survives (a rule no test guards)
// or a replacement no longer matches the source.
//
//	go run ./internal/mutations        # from the repository root (slow: one test run per rule)
package main

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
)

type edit struct{ old, new string }

type mutation struct {
	rule  string
	file  string
	edits []edit
}

var mutations = []mutation{
	{"joins keep the identity of map value pointers", "verifier/join.go", []edit{
		{"return value{k: kMapValue, idx: a.idx, id: j.id(a.id, b.id), s: s}", "return value{k: kMapValue, idx: a.idx, id: 1, s: s}"}}},
	{"pointers are ordered only inside their object", "verifier/branch.go", []edit{
		{"		if !ck.inObject(a) || !ck.inObject(b) {", "		if false {"}}},
	{"pointers are compared with 0 only inside their object", "verifier/branch.go", []edit{
		{"	if !ck.inObject(p) {", "	if false {"}}},
	{"stored states keep every link", "verifier/checker.go", []edit{
		{"		ids, cnt = append(ids, v.id), append(cnt, 1)", "		if len(ids) < 16 {\n			ids, cnt = append(ids, v.id), append(cnt, 1)\n		}"},
		{"		return false // (not reached: each and update visit the same values)", "		return true"}}},
	{"record accesses need the path's reference", "verifier/mem.go", []edit{
		{"		} else if !st.hasRef(ptr.id) {", "		} else if false {"}}},
	{"map access flags", "verifier/config.go", []edit{
		{"func readOnly(m *loader.MapSpec) bool { return m.Freeze || m.Flags&MapFlagReadOnlyProg != 0 }", "func readOnly(m *loader.MapSpec) bool { return m.Freeze }"}}},
	{"bpf_printk's format decides the registers it reads", "verifier/call.go", []edit{
		{"		variadic, fmtWhy = ck.printkValues(st, f)", "		_, fmtWhy = ck.printkValues(st, f)\n		variadic = 0"}}},
	{"atomic updates are aligned", "verifier/mem.go", []edit{
		{"		if low := uint64(size - 1); o.t.m&low != 0 || o.t.v&low != 0 {", "		if low := uint64(size - 1); false && o.t.m&low != 0 {"}}},
	{"the region rule: what a local branch's region writes is local", "verifier/flow.go", []edit{
		{"	if cond == 0 || dropRegionRule || fact.flags&(factJump|factFall) != factJump|factFall {", "	if true {"}}},
	{"labels join where paths meet", "verifier/flow.go", []edit{
		{"			if f.regs[r] == 0 && g.regs[r] != 0 {", "			if false {"}}},
	{"helper results that read process state are local", "verifier/flow.go", []edit{
		{"		r0 = ck.source(pc, srcHelper, int(id), 0)", "		r0 = 0"}}},
	{"a lookup's result depends on its key", "verifier/flow.go", []edit{
		{"				r0 = either(r0, ck.flowMem(st, pc, &ops[1], 0, ks))", "				_ = ks"}}},
	{"per-CPU maps are local", "verifier/flow.go", []edit{
		{"	if ck.local(int(mi)) || ck.written[mi] || ck.perCPU(int(mi)) {", "	if ck.local(int(mi)) || ck.written[mi] {"}}},
	{"an LRU lookup writes the map", "verifier/call.go", []edit{
		{"	if haveMap && id == helpers.MapLookupElem && lru(ck.maps[mapv.idx].Type) {", "	if false {"}}},
	{"hosts read the C int the verifier checks", "hook/hook.go", []edit{
		{"		return int64(int32(uint32(r0)))", "		return int64(r0)"}}},
}

func main() {
	survived := 0
	for _, m := range mutations {
		orig, err := os.ReadFile(m.file)
		if err != nil {
			fmt.Fprintln(os.Stderr, "mutations:", err)
			os.Exit(2)
		}
		src := string(orig)
		for _, e := range m.edits {
			if strings.Count(src, e.old) != 1 {
				fmt.Fprintf(os.Stderr, "mutations: %s: %q no longer matches %s exactly once: update this program\n", m.rule, e.old, m.file)
				os.Exit(2)
			}
			src = strings.Replace(src, e.old, e.new, 1)
		}
		if err := os.WriteFile(m.file, []byte(src), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "mutations:", err)
			os.Exit(2)
		}
		pkgs := []string{"./verifier"}
		if strings.HasPrefix(m.file, "hook/") {
			pkgs = []string{"./hook", "./nccl"}
		}
		cmd := exec.Command("go", append([]string{"test", "-count=1", "-run", "TestCorpus|TestRedteam|TestPtrSoundness$|TestTwoRunOracle$|TestRangeResult|TestApply"}, pkgs...)...)
		out, runErr := cmd.CombinedOutput()
		if err := os.WriteFile(m.file, orig, 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "mutations: RESTORE FAILED:", m.file, err)
			os.Exit(2)
		}
		var failed []string
		for _, l := range strings.Split(string(out), "\n") {
			if strings.HasPrefix(l, "--- FAIL: ") {
				failed = append(failed, strings.Fields(l)[2])
			}
		}
		switch {
		case runErr != nil && len(failed) > 0:
			fmt.Printf("caught    %s: %s\n", m.rule, strings.Join(failed, ", "))
		case runErr != nil:
			fmt.Printf("BROKEN    %s: the mutated source did not build or run:\n%s\n", m.rule, out)
			survived++
		default:
			fmt.Printf("SURVIVED  %s: no test failed without it\n", m.rule)
			survived++
		}
	}
	if survived > 0 {
		os.Exit(1)
	}
}
