package offline

import (
	"encoding/hex"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/ncclbpf/ncclbpf/hook"
	"github.com/ncclbpf/ncclbpf/internal/cli"
	"github.com/ncclbpf/ncclbpf/internal/config"
	"github.com/ncclbpf/ncclbpf/internal/ncclabi"
	"github.com/ncclbpf/ncclbpf/internal/ncclabi/ctxfill"
)

// The context of an offline run: typical values, the aliases, --set,
// --costs and the fields derived from others.

// hookDefaults are the values a typical call has, by hook ("*" for a
// prefix); fields not named start at 0. Derived fields are filled by
// deriveContext.
var hookDefaults = map[string][]string{
	hook.Tuner: {"comm_id=0x1", "n_bytes=1MiB", "coll_type=allreduce", "num_pipe_ops=1", "reg_buff=0",
		"n_ranks=8", "n_nodes=1", "abi_version=5", "algorithm=-1", "protocol=-1", "n_channels=0"},
	hook.TunerChunkSize: {"comm_id=0x1", "n_bytes=1MiB", "chunk_size=512KiB", "coll_type=allreduce",
		"algorithm=ring", "protocol=simple", "n_channels=1", "n_ranks=8", "n_nodes=1", "new_chunk_size=0"},
	"profiler/*": {"comm_id=0x1", "bytes=1MiB", "rank=0", "n_ranks=8", "func=allreduce", "algorithm=ring",
		"protocol=simple", "n_channels=4", "peer=-1", "channel_id=-1", "start_ns=1000000000", "duration_ns=100000",
		"n_children=1", "is_send=-1", "abi_version=5", "phase_id=-1"},
	hook.ProfilerP2pEnd:      {"func=send", "peer=1", "algorithm=-1", "protocol=-1", "n_channels=1"},
	hook.ProfilerKernelChEnd: {"channel_id=0"},
	hook.ProfilerProxyOpEnd:  {"channel_id=0", "peer=1", "is_send=1", "xfer_bytes=1MiB"},
	hook.ProfilerKernelPhaseEnd: {"channel_id=0", "phase_id=1", "abi_version=7", "gpu_duration_ns=20000",
		"n_children=0"},
}

func defaultsFor(h *hook.Hook) []string {
	var out []string
	if i := strings.LastIndexByte(h.Name, '/'); i >= 0 {
		out = append(out, hookDefaults[h.Name[:i]+"/*"]...)
	}
	return append(out, hookDefaults[h.Name]...)
}

// buildContext fills r.ctx: the hook's context (typical values, then the
// aliases, --costs and --set, then derived fields) or the --mem bytes.
func (r *runTarget) buildContext(o *Options) error {
	var raw []byte
	if o.Mem != "" {
		b, err := parseHexMem(o.Mem)
		if err != nil {
			return err
		}
		raw = b
	}
	if r.hook == nil {
		if len(o.Sets) > 0 || o.Coll != "" || o.Bytes != "" || o.Ranks != "" || o.Nodes != "" || o.Costs != "" || o.TuningLog != "" {
			return cli.Usagef("program %s has no hook, hence no context fields: give its memory with --mem, or a hook with --hook", r.prog.Name)
		}
		r.ctx = raw
		return nil
	}
	c := &r.hook.Context
	r.ctx = make([]byte, c.Size)
	r.set = map[string]bool{}
	if raw != nil {
		if len(raw) > c.Size {
			return fmt.Errorf("--mem: %d bytes, but the context of hook %s (struct %s) has %d", len(raw), r.hook.Name, c.Name, c.Size)
		}
		copy(r.ctx, raw)
	} else {
		for _, s := range defaultsFor(r.hook) {
			if err := r.setField(s, false); err != nil {
				return fmt.Errorf("BUG: default %s: %w", s, err)
			}
		}
	}
	if err := r.loadTuningLog(o, raw == nil); err != nil {
		return err
	}
	aliases := []struct {
		flag, val string
		fields    []string
	}{
		{"coll", o.Coll, []string{"coll_type", "func"}},
		{"bytes", o.Bytes, []string{"n_bytes", "bytes"}},
		{"ranks", o.Ranks, []string{"n_ranks"}},
		{"nodes", o.Nodes, []string{"n_nodes"}},
	}
	for _, a := range aliases {
		if a.val == "" {
			continue
		}
		var field string
		for _, f := range a.fields {
			if c.Field(f) != nil {
				field = f
				break
			}
		}
		if field == "" {
			return fmt.Errorf("--%s: the context of hook %s has no field %s; fields: %s", a.flag, r.hook.Name,
				strings.Join(a.fields, " or "), c.FieldList())
		}
		if err := r.setField(field+"="+a.val, true); err != nil {
			return fmt.Errorf("--%s: %w", a.flag, err)
		}
		if (a.flag == "ranks" || a.flag == "nodes") && r.get(field) < 1 {
			return fmt.Errorf("--%s %s: want at least 1", a.flag, a.val)
		}
	}
	var costSets []string
	for _, s := range o.Sets {
		if strings.HasPrefix(strings.TrimSpace(s), "cost[") && c.Name == tunerCtxName {
			costSets = append(costSets, s) // after the cost table exists
			continue
		}
		if err := r.setField(s, true); err != nil {
			return fmt.Errorf("--set %s", err)
		}
	}
	if c.Name == tunerCtxName {
		if o.Costs != "" && raw == nil {
			r.set["cost"] = true
		}
		if raw == nil {
			r.fillModelCosts()
		}
		if o.Costs != "" {
			if err := r.applyCosts(o.Costs); err != nil {
				return fmt.Errorf("--costs %s: %w", o.Costs, err)
			}
		}
		for _, s := range costSets {
			if err := r.setField(s, true); err != nil {
				return fmt.Errorf("--set %s", err)
			}
		}
	} else if o.Costs != "" {
		return fmt.Errorf("--costs: hook %s has no cost table (only tuner programs do)", r.hook.Name)
	}
	if c := r.tuning; c != nil && (int64(c.Comm.NRanks) != r.get("n_ranks") || int64(c.Comm.NNodes) != r.get("n_nodes")) {
		r.notes = append(r.notes, fmt.Sprintf("the tables of %s are of %d ranks on %d nodes; %d ranks on %d nodes change only the per-call parts of the model",
			o.TuningLog, c.Comm.NRanks, c.Comm.NNodes, r.get("n_ranks"), r.get("n_nodes")))
	}
	if raw == nil {
		r.derive()
	}
	return nil
}

const tunerCtxName = "ncclbpf_tuner_ctx"

// setField applies "name=value"; explicit marks the field as set by the
// user (derived fields are then left alone).
func (r *runTarget) setField(s string, explicit bool) error {
	name, val, ok := strings.Cut(s, "=")
	name, val = strings.TrimSpace(name), strings.TrimSpace(val)
	if !ok || name == "" {
		return fmt.Errorf("%q: want FIELD=VALUE", s)
	}
	c := &r.hook.Context
	el, err := c.Lookup(name)
	if err != nil {
		return fmt.Errorf("%s: hook %s: %w", name, r.hook.Name, err)
	}
	v, err := parseFieldValue(c, el, val)
	if err != nil {
		return fmt.Errorf("%s=%s: %w", name, val, err)
	}
	if err := el.Put(r.ctx, v); err != nil {
		return err
	}
	if explicit {
		r.set[el.Field.Name] = true
	}
	return nil
}

// parseFieldValue parses a value for element el: names for enum fields,
// microseconds for tuner cost cells, integers otherwise.
func parseFieldValue(c *hook.Context, el hook.Elem, val string) (uint64, error) {
	if names := hook.EnumNames(el.Field.Name); names != nil {
		low := strings.ToLower(val)
		for i, n := range names {
			if low == n {
				return uint64(i), nil
			}
		}
		if low == "undef" || low == "default" || low == "none" {
			return ^uint64(0), nil
		}
		if _, err := config.ParseInt(val); err != nil {
			return 0, fmt.Errorf("want a number or one of %s", strings.Join(names, ", "))
		}
	}
	if c.Name == tunerCtxName && el.Field.Name == "cost" {
		bits, err := parseCost(val)
		return uint64(bits), err
	}
	return config.ParseInt(val)
}

// parseCost parses a cost cell: microseconds (a float), "na" or any
// negative number for "unavailable", or raw float bits as 0x....
func parseCost(s string) (uint32, error) {
	low := strings.ToLower(strings.TrimSpace(s))
	switch low {
	case "na", "n/a", "unavailable", "off", "-":
		return costUnavailable, nil
	}
	if strings.HasPrefix(low, "0x") {
		v, err := strconv.ParseUint(low[2:], 16, 32)
		if err != nil {
			return 0, fmt.Errorf("%q: raw cost bits must be a 32-bit hex number", s)
		}
		return uint32(v), nil
	}
	f, err := strconv.ParseFloat(low, 32)
	if err != nil || math.IsNaN(f) {
		return 0, fmt.Errorf("%q: want a cost in microseconds (e.g. 12.5), na for unavailable, or raw float bits 0x...", s)
	}
	if f < 0 {
		return costUnavailable, nil
	}
	return math.Float32bits(float32(f)), nil
}

// costUnavailable is -1.0f, NCCL's mark of an unavailable cell.
const costUnavailable = 0xBF800000

func (r *runTarget) elem(name string) (hook.Elem, bool) {
	el, err := r.hook.Context.Lookup(name)
	return el, err == nil
}

func (r *runTarget) get(name string) int64 {
	el, ok := r.elem(name)
	if !ok {
		return 0
	}
	return el.Signed(r.ctx)
}

func (r *runTarget) put(name string, v int64) {
	if el, ok := r.elem(name); ok && !r.set[el.Field.Name] {
		el.Put(r.ctx, uint64(v))
	}
}

// derive fills the fields that follow from others, unless set: first the
// fields the context's abi_version does not carry (internal/ncclabi/ctxfill),
// at the value the shim gives them.
func (r *runTarget) derive() {
	for _, f := range r.hook.Context.Fields {
		src, def, err := ctxfill.Fill(r.hook.Context.Name, r.hook.Name, f.Name, int(r.get("abi_version")))
		if err == nil && src == ctxfill.Absent && f.Array <= 1 {
			r.put(f.Name, def)
		}
	}
	switch r.hook.Context.Name {
	case tunerCtxName:
		nodes, ranks := r.get("n_nodes"), r.get("n_ranks")
		if src, _, _ := ctxfill.Fill(tunerCtxName, r.hook.Name, "n_nvl_domains", int(r.get("abi_version"))); src == ctxfill.NCCL {
			r.put("n_nvl_domains", nodes) // NCCL sets it to n_nodes
			if d := r.get("n_nvl_domains"); d > 0 {
				r.put("min_ranks_per_nvl_domain", ranks/d)
				r.put("max_ranks_per_nvl_domain", (ranks+d-1)/d)
			}
		}
		var mask int64
		for i := 0; i < ncclabi.Cells; i++ {
			if r.costBits(i)>>31 == 0 {
				mask |= 1 << i
			}
		}
		r.put("avail_mask", mask)
	case hook.ProfilerContext.Name:
		for i, n := range hook.ProfilerHookNames {
			if n == r.hook.Name {
				r.put("event", int64(i+1))
			}
		}
		start, dur, end := r.get("start_ns"), r.get("duration_ns"), r.get("end_ns")
		if r.set["end_ns"] && !r.set["duration_ns"] {
			r.put("duration_ns", max(end-start, 0))
		} else {
			r.put("end_ns", start+dur)
		}
		if r.get("gpu_duration_ns") != 0 {
			if el, ok := r.elem("flags"); ok && !r.set["flags"] {
				el.Put(r.ctx, el.Get(r.ctx)|1) // NCCLBPF_PROF_F_GPU_TIMED
			}
		}
	}
}

func (r *runTarget) costBits(i int) uint32 {
	el, _ := r.elem(fmt.Sprintf("cost[%d]", i))
	return uint32(el.Get(r.ctx))
}

func (r *runTarget) setCost(i int, bits uint32) {
	el, _ := r.elem(fmt.Sprintf("cost[%d]", i))
	el.Put(r.ctx, uint64(bits))
}

// loadTuningLog reads --tuning-log: NCCL's tables for the cost model, whose
// communicator's ranks and nodes become the typical values (defaults).
func (r *runTarget) loadTuningLog(o *Options, defaults bool) error {
	if o.TuningLog == "" {
		return nil
	}
	if r.hook.Context.Name != tunerCtxName {
		return fmt.Errorf("--tuning-log: hook %s has no cost table (only tuner programs do)", r.hook.Name)
	}
	ts, err := ncclabi.ParseTuningLogFile(o.TuningLog)
	if err != nil {
		return fmt.Errorf("--tuning-log: %w", err)
	}
	r.tuning = ts[0]
	if c := r.tuning.Comm; defaults && c.NRanks > 0 {
		r.put("n_ranks", int64(c.NRanks))
		r.put("n_nodes", int64(c.NNodes))
	}
	return nil
}

// fillModelCosts fills the cost table as NCCL would hand it to the tuner
// for this call: NCCL's per-call model (internal/ncclabi) over the tables
// of --tuning-log, or the built-in ones, for the context's collective,
// size, pipelined ops, ranks and nodes.
func (r *runTarget) fillModelCosts() {
	t := r.tuning
	if t == nil {
		t = ncclabi.DefaultTuning()
	}
	comm := t.Comm
	comm.NRanks, comm.NNodes = int(r.get("n_ranks")), int(r.get("n_nodes"))
	if comm.NNodes > 0 && (comm.NRanks != t.Comm.NRanks || comm.NNodes != t.Comm.NNodes) {
		comm.LocalRanks = (comm.NRanks + comm.NNodes - 1) / comm.NNodes
	}
	costs := t.Costs(comm, ncclabi.Call{Func: int(r.get("coll_type")), Bytes: uint64(r.get("n_bytes")),
		NumPipeOps: int(r.get("num_pipe_ops"))})
	for a := range costs {
		for p := range costs[a] {
			r.setCost(a*len(costs[a])+p, math.Float32bits(costs[a][p]))
		}
	}
}

// applyCosts applies a --costs list.
func (r *runTarget) applyCosts(spec string) error {
	for _, item := range strings.Split(spec, ",") {
		item = strings.TrimSpace(item)
		switch strings.ToLower(item) {
		case "":
			continue
		case "none":
			for i := 0; i < ncclabi.Cells; i++ {
				r.setCost(i, costUnavailable)
			}
			continue
		case "model", "default":
			r.fillModelCosts()
			continue
		}
		name, val, ok := strings.Cut(item, "=")
		if !ok {
			return fmt.Errorf("%q: want ALGO=US, PROTO=US, ALGO/PROTO=US, all=US, none or model", item)
		}
		bits, err := parseCost(val)
		if err != nil {
			return err
		}
		cells, err := costCells(strings.ToLower(strings.TrimSpace(name)))
		if err != nil {
			return err
		}
		for _, i := range cells {
			r.setCost(i, bits)
		}
	}
	return nil
}

// costCells returns the flat indexes of the cells a --costs name covers.
func costCells(name string) ([]int, error) {
	index := func(names []string, s string) int {
		for i, n := range names {
			if n == s {
				return i
			}
		}
		return -1
	}
	var out []int
	if a, p, ok := strings.Cut(name, "/"); ok {
		ai, pi := index(hook.AlgoNames, a), index(hook.ProtoNames, p)
		if ai < 0 || pi < 0 {
			return nil, fmt.Errorf("%q: want ALGO/PROTO with ALGO one of %s and PROTO one of %s", name,
				strings.Join(hook.AlgoNames, ", "), strings.Join(hook.ProtoNames, ", "))
		}
		return []int{ai*3 + pi}, nil
	}
	if a := index(hook.AlgoNames, name); a >= 0 {
		return []int{a * 3, a*3 + 1, a*3 + 2}, nil
	}
	if p := index(hook.ProtoNames, name); p >= 0 {
		for a := 0; a < len(hook.AlgoNames); a++ {
			out = append(out, a*3+p)
		}
		return out, nil
	}
	if name == "all" {
		for i := 0; i < ncclabi.Cells; i++ {
			out = append(out, i)
		}
		return out, nil
	}
	return nil, fmt.Errorf("%q: not an algorithm (%s), a protocol (%s), ALGO/PROTO or all", name,
		strings.Join(hook.AlgoNames, ", "), strings.Join(hook.ProtoNames, ", "))
}

// parseHexMem parses --mem: hex bytes, spaces allowed ("01 02 ff" or
// "0102ff"), or @FILE holding them ('#' comments allowed).
func parseHexMem(s string) ([]byte, error) {
	src := s
	if name, ok := strings.CutPrefix(s, "@"); ok {
		b, err := os.ReadFile(name)
		if err != nil {
			return nil, fmt.Errorf("--mem: %w", err)
		}
		var lines []string
		for _, l := range strings.Split(string(b), "\n") {
			l, _, _ = strings.Cut(l, "#")
			lines = append(lines, l)
		}
		src = strings.Join(lines, " ")
	}
	var digits strings.Builder
	for _, f := range strings.Fields(src) {
		f = strings.TrimPrefix(strings.TrimPrefix(f, "0x"), "0X")
		if len(f)%2 == 1 {
			f = "0" + f // "1" in a list of bytes is 01
		}
		digits.WriteString(f)
	}
	b, err := hex.DecodeString(digits.String())
	if err != nil {
		return nil, fmt.Errorf("--mem %q: not hex bytes: %w", s, err)
	}
	return b, nil
}
