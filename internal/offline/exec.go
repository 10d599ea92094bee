package offline

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"github.com/ncclbpf/ncclbpf/internal/ncclabi"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/ncclbpf/ncclbpf/hook"
	"github.com/ncclbpf/ncclbpf/maps"
)

// Running the program of ncclbpf run and describing what it did.

// runReport is what a run prints; --json prints it as it is.
type runReport struct {
	Object   string     `json:"object"`
	Program  string     `json:"program"`
	Section  string     `json:"section"`
	Hook     string     `json:"hook,omitempty"`
	Context  string     `json:"context,omitempty"` // C struct name
	Verified bool       `json:"verified"`
	Engine   string     `json:"engine"`
	Notes    []string   `json:"notes,omitempty"`
	Inputs   []runField `json:"inputs,omitempty"`
	Mem      string     `json:"mem,omitempty"` // generic programs: input bytes, hex
	Runs     int        `json:"runs"`
	NsPerRun float64    `json:"ns_per_run"`
	R0       uint64     `json:"r0"`
	R0Signed int64      `json:"r0_signed"`
	R0Means  string     `json:"r0_meaning,omitempty"`
	Outputs  []runField `json:"outputs,omitempty"`
	MemAfter string     `json:"mem_after,omitempty"`
	Effect   *tunerEff  `json:"effect,omitempty"`
	Outcomes []outcome  `json:"outcomes,omitempty"`
	// OtherRuns counts the runs whose result was none of the first
	// maxOutcomes distinct ones.
	OtherRuns int         `json:"other_runs,omitempty"`
	Maps      []mapReport `json:"maps"`
	Printk    []string    `json:"printk,omitempty"`

	costGrid bool // text: print cost[...] as a table
}

// runField is one context element with its value and what it means.
type runField struct {
	Name    string `json:"name"`
	Value   any    `json:"value"` // int64 when negative as a signed value of its width, else uint64
	Meaning string `json:"meaning,omitempty"`
	raw     uint64
}

// maxOutcomes is how many distinct results --repeat tells apart.
const maxOutcomes = 256

// outcome is one distinct result of --repeat runs.
type outcome struct {
	Count    int        `json:"count"`
	FirstRun int        `json:"first_run"` // 0-based
	R0       uint64     `json:"r0"`
	Outputs  []runField `json:"outputs,omitempty"`
}

// tunerEff is what the tuner host would make of the decision.
type tunerEff struct {
	Applied   bool   `json:"applied"`
	Algorithm string `json:"algorithm"`
	Protocol  string `json:"protocol"`
	Channels  int64  `json:"channels"` // 0: NCCL's count
	Text      string `json:"text"`
	NCCL      string `json:"nccl_without_policy"`
}

// mapReport is one map before and after the runs.
type mapReport struct {
	Name    string        `json:"name"`
	Type    string        `json:"type"`
	Changed bool          `json:"changed"`
	Before  []maps.Entry  `json:"before"`
	After   []maps.Entry  `json:"after"`
	Records []string      `json:"records,omitempty"` // ring buffers: records the runs submitted, hex
	dump    *maps.MapDump // after
}

func (r *runTarget) execute(o *Options) (*runReport, error) {
	rep := &runReport{Object: r.object, Program: r.prog.Name, Section: r.prog.Section, Verified: r.verified,
		Engine: r.engine, Notes: r.notes, Runs: o.Repeat}
	var elems []hook.Elem
	if r.hook != nil {
		rep.Hook, rep.Context = r.hook.Name, r.hook.Context.Name
		elems = r.hook.Context.Elems()
		for _, el := range elems {
			if el.Field.Access&hook.Write == 0 {
				rep.Inputs = append(rep.Inputs, r.describe(el, r.ctx))
			}
		}
		rep.costGrid = r.hook.Context.Name == tunerCtxName
	} else {
		rep.Mem = hex.EncodeToString(r.ctx)
	}
	before := make([][]maps.KV, len(r.maps))
	if o.Maps != "none" {
		for i, m := range r.maps {
			kvs, err := rawContents(m)
			if err != nil {
				return nil, fmt.Errorf("map %s: %w", m.Name(), err)
			}
			before[i] = kvs
		}
	}
	var seqs []hook.Elem
	for _, el := range elems {
		if n := el.Field.Name; n == "seq" || strings.HasSuffix(n, "_seq") {
			seqs = append(seqs, el)
			if o.Repeat > 1 {
				for i := range rep.Inputs {
					if rep.Inputs[i].Name == el.Name {
						rep.Inputs[i].Meaning = fmt.Sprintf("counts up to %d over the runs", el.Get(r.ctx)+uint64(o.Repeat-1))
					}
				}
			}
		}
	}
	maps.CapturePrintk(true)
	defer maps.CapturePrintk(false)
	maps.DrainPrintk()
	buf := make([]byte, len(r.ctx))
	seen := map[string]int{}
	var elapsed time.Duration
	for i := 0; i < o.Repeat; i++ {
		copy(buf, r.ctx)
		for _, el := range seqs {
			el.Put(buf, el.Get(r.ctx)+uint64(i))
		}
		start := time.Now()
		r0, err := r.exec.Run(buf)
		elapsed += time.Since(start)
		if err != nil {
			return nil, fmt.Errorf("program %s: run %d of %d: %w", r.prog.Name, i+1, o.Repeat, err)
		}
		rep.R0, rep.R0Signed = r0, int64(r0)
		rep.Outputs = rep.Outputs[:0]
		for _, el := range elems {
			if el.Field.Access&hook.Write != 0 {
				rep.Outputs = append(rep.Outputs, r.describe(el, buf))
			}
		}
		if r.hook == nil {
			rep.MemAfter = hex.EncodeToString(buf)
		}
		key := fmt.Sprint(r0, rep.Outputs, rep.MemAfter)
		if k, ok := seen[key]; ok {
			rep.Outcomes[k].Count++
		} else if len(rep.Outcomes) == maxOutcomes {
			rep.OtherRuns++
		} else {
			seen[key] = len(rep.Outcomes)
			rep.Outcomes = append(rep.Outcomes, outcome{Count: 1, FirstRun: i, R0: r0, Outputs: append([]runField(nil), rep.Outputs...)})
		}
	}
	rep.NsPerRun = float64(elapsed.Nanoseconds()) / float64(o.Repeat)
	if o.Repeat == 1 {
		rep.Outcomes = nil
	}
	if rep.MemAfter == rep.Mem {
		rep.MemAfter = ""
	}
	rep.Printk = maps.DrainPrintk()
	rep.R0Means = r0Meaning(r.hook, rep.R0)
	if r.hook != nil && r.hook.Context.Name == tunerCtxName {
		rep.Effect = r.tunerEffect(rep.R0, buf)
	}
	if o.Maps != "none" {
		for i, m := range r.maps {
			mr, err := reportMap(m, before[i], o.Maps == "all")
			if err != nil {
				return nil, err
			}
			if mr != nil {
				rep.Maps = append(rep.Maps, *mr)
			}
		}
	}
	if rep.Maps == nil {
		rep.Maps = []mapReport{}
	}
	return rep, nil
}

// rawContents copies every entry of m (nothing for ring buffers).
func rawContents(m *maps.Map) ([]maps.KV, error) {
	var kvs []maps.KV
	if m.Spec().Type == maps.RingBuf {
		return nil, nil
	}
	err := m.Iterate(func(k, v []byte) bool {
		kvs = append(kvs, maps.KV{Key: k, Value: v})
		return true
	})
	return kvs, err
}

// reportMap compares m with its contents before the runs (raw bytes: big
// tables cost a copy, not a decoding) and decodes both sides when they
// differ or all is set; nil when there is nothing to show.
func reportMap(m *maps.Map, before []maps.KV, all bool) (*mapReport, error) {
	spec := m.Spec()
	mr := &mapReport{Name: spec.Name, Type: spec.Type.String()}
	if spec.Type == maps.RingBuf {
		m.ReadRing(func(rec []byte) bool {
			mr.Records = append(mr.Records, hex.EncodeToString(rec))
			return len(mr.Records) < 64
		})
		mr.Changed = len(mr.Records) > 0
		mr.Before, mr.After = []maps.Entry{}, []maps.Entry{}
	} else {
		now, err := rawContents(m)
		if err != nil {
			return nil, fmt.Errorf("map %s: %w", spec.Name, err)
		}
		mr.Changed = !sameKVs(before, now)
	}
	if !mr.Changed && !all {
		return nil, nil
	}
	after, err := maps.Dump(m)
	if err != nil {
		return nil, err
	}
	mr.dump = after
	if spec.Type == maps.RingBuf {
		return mr, nil
	}
	mr.After = after.Entries
	if !mr.Changed {
		mr.Before = after.Entries
		return mr, nil
	}
	// Decode the old contents: load them into a scratch map of the same spec.
	old := spec
	old.Contents, old.Freeze = before, false
	scratch, err := maps.New(old)
	if err != nil {
		return nil, fmt.Errorf("map %s: decode the contents before the run: %w", spec.Name, err)
	}
	defer scratch.Close()
	d, err := maps.Dump(scratch)
	if err != nil {
		return nil, err
	}
	mr.Before = d.Entries
	return mr, nil
}

func sameKVs(a, b []maps.KV) bool {
	if len(a) != len(b) {
		return false
	}
	old := make(map[string][]byte, len(a))
	for _, kv := range a {
		old[string(kv.Key)] = kv.Value
	}
	for _, kv := range b {
		v, ok := old[string(kv.Key)]
		if !ok || string(v) != string(kv.Value) {
			return false
		}
	}
	return true
}

func sameJSON(a, b any) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(x) == string(y)
}

// describe reads element el of ctx and says what its value means.
func (r *runTarget) describe(el hook.Elem, ctx []byte) runField {
	u, s := el.Get(ctx), el.Signed(ctx)
	f := runField{Name: el.Name, raw: u}
	if s < 0 && el.Field.Size < 8 {
		f.Value = s
	} else {
		f.Value = u
	}
	name := el.Field.Name
	out := el.Field.Access&hook.Write != 0
	switch {
	case hook.EnumNames(name) != nil:
		names := hook.EnumNames(name)
		switch {
		case s == -1 && out:
			f.Meaning = "leave it to NCCL"
		case s == -1:
			f.Meaning = "none"
		case s >= 0 && s < int64(len(names)):
			f.Meaning = names[s]
			if name == "event" && s == 0 {
				f.Meaning = ""
			}
		case out:
			f.Meaning = "not a valid value: the host drops the decision"
		default:
			f.Meaning = "unknown"
		}
	case r.hook.Context.Name == tunerCtxName && name == "cost":
		f.Meaning = costText(uint32(u))
	case name == "n_channels" && out:
		switch {
		case s == 0:
			f.Meaning = "leave it to NCCL"
		case s < 0:
			f.Meaning = "negative: the host drops the decision"
		case s > ncclabi.MaxChannels:
			f.Meaning = fmt.Sprintf("more than NCCL accepts: the host uses %d", ncclabi.MaxChannels)
		default:
			f.Meaning = fmt.Sprintf("%d channels", s)
		}
	case name == "new_chunk_size":
		if u == 0 {
			f.Meaning = "leave it to NCCL"
		} else {
			f.Meaning = sizeText(u)
		}
	case name == "avail_mask":
		f.Meaning = fmt.Sprintf("%d of %d cells available", popcount(uint32(u)&(1<<ncclabi.Cells-1)), ncclabi.Cells)
	case name == "bytes" || strings.HasSuffix(name, "_bytes") || strings.HasSuffix(name, "_size"):
		if u >= 1024 {
			f.Meaning = sizeText(u)
		}
	case strings.HasSuffix(name, "_ns") && name != "start_ns" && name != "end_ns":
		if u >= 1000 {
			f.Meaning = durationText(u)
		}
	}
	return f
}

func popcount(v uint32) int {
	n := 0
	for ; v != 0; v &= v - 1 {
		n++
	}
	return n
}

func costText(bits uint32) string {
	if bits>>31 != 0 {
		return "unavailable"
	}
	return strconv.FormatFloat(float64(math.Float32frombits(bits)), 'g', 4, 32) + " µs"
}

func sizeText(u uint64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	v, i := float64(u), 0
	for v >= 1024 && i < len(units)-1 {
		v /= 1024
		i++
	}
	return strconv.FormatFloat(v, 'g', 4, 64) + " " + units[i]
}

func durationText(ns uint64) string {
	return time.Duration(ns).String()
}

// r0Meaning says what a program's return value means at its hook.
func r0Meaning(h *hook.Hook, r0 uint64) string {
	if h == nil {
		return ""
	}
	res := h.Return.Result(r0)
	if h.Name == hook.Tuner || h.Name == hook.TunerChunkSize {
		switch res {
		case hook.TunerApply:
			return "NCCLBPF_TUNER_APPLY: the host applies the outputs"
		case hook.TunerDefault:
			return "NCCLBPF_TUNER_DEFAULT: the outputs are ignored, NCCL decides"
		}
	}
	if res < h.Return.Min || res > h.Return.Max {
		return fmt.Sprintf("outside the hook's return range %d..%d", h.Return.Min, h.Return.Max)
	}
	return ""
}

// tunerEffect applies the host's rules to the decision in ctx (ncclabi.Apply,
// the Go mirror of plugin/tuner.c): what NCCL ends up running, and what it
// would run without a policy.
func (r *runTarget) tunerEffect(r0 uint64, ctx []byte) *tunerEff {
	var table [ncclabi.Cells]float32
	for i := range table {
		el, _ := r.elem(fmt.Sprintf("cost[%d]", i))
		table[i] = math.Float32frombits(uint32(el.Get(ctx)))
	}
	cell := func(a, p int) string {
		if a < 0 || p < 0 {
			return "no available cell"
		}
		return hook.AlgoNames[a] + "/" + hook.ProtoNames[p]
	}
	na, np := ncclabi.Pick(table)
	eff := &tunerEff{NCCL: cell(na, np), Algorithm: "nccl", Protocol: "nccl"}
	if na >= 0 {
		eff.NCCL += " (" + costText(math.Float32bits(table[na*3+np])) + ", the cheapest available cell)"
	}
	nccl0 := "NCCL decides: " + cell(na, np) + " with its own channel count"
	d, err := ncclabi.DecodeDecision(ctx)
	if err != nil {
		eff.Text = err.Error()
		return eff
	}
	partial := (d.Algorithm >= 0) != (d.Protocol >= 0)
	abi, _ := r.elem("abi_version")
	out := ncclabi.ApplyABI(table, r0, d, int(abi.Signed(ctx)))
	switch {
	case r.hook.Return.Result(r0) != hook.TunerApply:
		eff.Text = nccl0 + " (the program returned " + strconv.FormatInt(r.hook.Return.Result(r0), 10) + ")"
		return eff
	case out.Dropped != "":
		eff.Text = "dropped (" + out.Dropped + "); " + nccl0
		return eff
	case !out.Applied:
		eff.Text = nccl0 + " (every output left to NCCL)"
		return eff
	}
	eff.Applied = true
	eff.Algorithm, eff.Protocol, eff.Channels = hook.AlgoNames[out.Algorithm], hook.ProtoNames[out.Protocol], int64(out.Channels)
	chText := "its own channel count"
	if out.Channels > 0 {
		chText = fmt.Sprintf("%d channels", out.Channels)
		if d.Channels > out.Channels {
			chText += fmt.Sprintf(" (clamped from %d)", d.Channels)
		}
	}
	eff.Text = "NCCL runs " + cell(out.Algorithm, out.Protocol) + " with " + chText
	if partial {
		eff.Text += " (the cheapest cell of the " + map[bool]string{true: "row", false: "column"}[d.Algorithm >= 0] + " chosen)"
	}
	return eff
}
