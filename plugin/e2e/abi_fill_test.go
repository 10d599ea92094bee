package e2e

import (
	"bufio"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/ncclbpf/ncclbpf/hook"
	"github.com/ncclbpf/ncclbpf/internal/envconfig"
	"github.com/ncclbpf/ncclbpf/internal/ncclabi/ctxfill"
)

// fillDump is what a host's fill mode printed: per prefix ("ctx",
// "nccl", ...), each name's value.
type fillDump map[string]map[string]int64

func parseFillDump(t *testing.T, out string) fillDump {
	t.Helper()
	d := fillDump{}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 3 {
			continue
		}
		v, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil {
			continue
		}
		if d[f[0]] == nil {
			d[f[0]] = map[string]int64{}
		}
		d[f[0]][f[1]] = v
	}
	return d
}

// checkFill compares the context a program saw (seen, every element by
// its C name) with what internal/ncclabi/ctxfill says NCCL of version v
// provides for hook: a field NCCL provides holds what the host passed for
// it (passed); a field the version lacks, or an output, holds the
// table's default and the host passed nothing for it; a field the shim
// computes is checked by shim, and the host passed nothing for it either.
func checkFill(t *testing.T, v int, h *hook.Hook, seen, passed map[string]int64, shim func(name string, got int64) string) {
	t.Helper()
	_, desc := ctxfill.ForStruct(h.Context.Name)
	if desc == nil {
		t.Fatalf("hook %s: internal/ncclabi/ctxfill does not describe %s", h.Name, h.Context.Name)
	}
	elems := h.Context.Elems()
	if len(seen) != len(elems) {
		t.Errorf("v%d %s: the host printed %d elements of %s, which has %d", v, h.Name, len(seen), h.Context.Name, len(elems))
	}
	for _, el := range elems {
		got, ok := seen[el.Name]
		if !ok {
			t.Errorf("v%d %s: the host did not print %s", v, h.Name, el.Name)
			continue
		}
		rule, ok := desc.Rule(el.Field.Name, h.Name)
		if !ok {
			t.Errorf("v%d %s: no rule for %s", v, h.Name, el.Field.Name)
			continue
		}
		src, def := rule.At(v)
		p, gave := passed[el.Name]
		switch src {
		case ctxfill.NCCL:
			if !gave {
				t.Errorf("v%d %s: %s is NCCL's in the table, but this version's call passes nothing for it", v, h.Name, el.Name)
			} else if got != p {
				t.Errorf("v%d %s: %s = %d, NCCL passed %d", v, h.Name, el.Name, got, p)
			}
			continue
		case ctxfill.Absent, ctxfill.Output:
			if got != def {
				t.Errorf("v%d %s: %s = %d, want the table's %v default %d", v, h.Name, el.Name, got, src, def)
			}
		case ctxfill.Shim:
			if msg := shim(el.Name, got); msg != "" {
				t.Errorf("v%d %s: %s = %d: %s", v, h.Name, el.Name, got, msg)
			}
		}
		if gave {
			t.Errorf("v%d %s: NCCL passed %d for %s, which the table says is %v", v, h.Name, p, el.Name, src)
		}
	}
	for name := range passed {
		if _, ok := seen[name]; !ok {
			t.Errorf("v%d %s: the host passed %s, which is no element of %s", v, h.Name, name, h.Context.Name)
		}
	}
}

// TestTunerFillsPerABI: for every tuner version the library exports,
// one getCollInfo call (and one getChunkSize call from v6) made as NCCL of
// that version makes it; the contexts the programs see hold what
// internal/ncclabi/ctxfill says that version provides, and its defaults
// for the rest.
func TestTunerFillsPerABI(t *testing.T) {
	artifacts(t)
	for v := ctxfill.Tuner.Oldest; v <= ctxfill.Tuner.Newest; v++ {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			d := parseFillDump(t, host(t, nil, "", "fill", art.lib, strconv.Itoa(v)))
			ctx := d["ctx"]
			costBits := func(i int) int64 { return ctx[fmt.Sprintf("cost[%d][%d]", i/3, i%3)] }
			checkFill(t, v, hook.Get(hook.Tuner), ctx, d["nccl"], func(name string, got int64) string {
				switch {
				case name == "call_seq" && got != 0:
					return "want 0, the communicator's first call"
				case name == "abi_version" && got != int64(v):
					return fmt.Sprintf("want %d", v)
				case name == "avail_mask":
					var m int64
					for i := 0; i < hook.TunerCostCells; i++ {
						if costBits(i)>>31 == 0 {
							m |= 1 << i
						}
					}
					if got != m {
						return fmt.Sprintf("the cost table's available cells are %#x", m)
					}
				case strings.HasPrefix(name, "cost["):
					// v2's table, built from collNetSupport = 0 and nvlsSupport = 1: the CollNet
					// rows unavailable (-1.0), every other cell 0.
					collnet := strings.HasPrefix(name, "cost[2]") || strings.HasPrefix(name, "cost[3]")
					if (collnet && got != 0xBF800000) || (!collnet && got != 0) || d["v2"]["collnet_support"] != 0 {
						return "want -1.0 for the CollNet rows (no collNetSupport), 0 elsewhere"
					}
				case name != "avail_mask" && name != "call_seq" && name != "abi_version":
					return "no check for a field the shim computes"
				}
				return ""
			})
			if v < 6 {
				if len(d["chunk"]) != 0 {
					t.Errorf("v%d: a getChunkSize context, which this version has no call for", v)
				}
				return
			}
			checkFill(t, v, hook.Get(hook.TunerChunkSize), d["chunk"], d["chunk-nccl"], func(name string, got int64) string {
				if name == "call_seq" && got == 1 {
					return "" // getCollInfo calls so far
				}
				return "want call_seq 1, after one getCollInfo call"
			})
		})
	}
}

// TestProfilerFillsPerABI: for every profiler version the library
// exports, one collective and one send as NCCL of that version describes
// them; the contexts of coll_end and p2p_end (and, from v4, of the
// collective's kernel channel and send-side proxy operation) hold what
// internal/ncclabi/ctxfill says that version provides, and its defaults
// for the rest.
func TestProfilerFillsPerABI(t *testing.T) {
	profArtifacts(t)
	out, _ := profHost(t, []string{envconfig.Policy + "=none"}, 0, "fill", profArt.lib)
	d := parseFillDump(t, out)
	checked := 0
	for v := ctxfill.Profiler.Oldest; v <= ctxfill.Profiler.Newest; v++ {
		for id, name := range hook.ProfilerHookNames {
			key := fmt.Sprintf("%d:%s", v, strings.TrimPrefix(name, "profiler/"))
			seen := d["ctx:"+key]
			if seen == nil {
				continue
			}
			checked++
			checkFill(t, v, hook.Get(name), seen, d["nccl:"+key], func(field string, got int64) string {
				switch field {
				case "event":
					if got != int64(id+1) {
						return fmt.Sprintf("want %d, the hook's id", id+1)
					}
				case "abi_version":
					if got != int64(v) {
						return fmt.Sprintf("want %d", v)
					}
				case "local_seq":
					if got != 0 {
						return "want 0, the hook's first event"
					}
				case "start_ns", "end_ns":
					if got <= 0 {
						return "want a time"
					}
				case "duration_ns":
					if got != seen["end_ns"]-seen["start_ns"] {
						return "want end_ns - start_ns"
					}
				case "flags":
					if timed := got&1 != 0; timed != (seen["gpu_duration_ns"] != 0) {
						return "NCCLBPF_PROF_F_GPU_TIMED must say whether gpu_duration_ns is set"
					}
				case "n_children":
					if got < 0 {
						return "want a count"
					}
				default:
					return "no check for a field the shim computes"
				}
				return ""
			})
		}
	}
	// coll_end and p2p_end under every version, kernel_ch_end and proxy_op_end from v4
	if want := 2*(ctxfill.Profiler.Newest-ctxfill.Profiler.Oldest+1) + 2*(ctxfill.Profiler.Newest-3); checked != want {
		t.Errorf("%d contexts checked, want %d:\n%s", checked, want, out)
	}
}
