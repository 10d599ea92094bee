// Package ctxfill says, for every hook context and every version of
// NCCL's plugin interfaces that libncclbpf.so serves, where each context
// field's value comes from: an argument NCCL passes in that version, a
// value the shim computes whatever NCCL passes, or nothing (the version
// does not carry it, and the field holds a fixed default).
//
// It is the one description of what NCCL fills per ABI version. The shim's
// fill code (plugin/tuner*.c, plugin/profiler*.c, plugin/net*.c) is checked
// against it through the C test hosts, version by version (plugin/e2e:
// TestTunerFillsPerABI, TestProfilerFillsPerABI, TestNetFields), and
// `ncclbpf run --set abi_version=N` builds its offline context from it
// (cmd/ncclbpf). The layouts of the contexts themselves come from the
// headers (hook/zz_contexts.go); this package names fields by their C
// names only, and its test checks that it covers every field of every
// context.
package ctxfill

import "fmt"

// Source is where a field's value comes from.
type Source uint8

// Sources.
const (
	// NCCL: an argument NCCL passes in this version, copied or converted
	// (a count times its datatype's size, a name's hash).
	NCCL Source = iota + 1
	// Shim: computed by the shim whatever NCCL passes: counters, clock
	// readings, the hook id, the version, the availability mask of the
	// cost table.
	Shim
	// Absent: this version does not carry it; the field holds Default.
	Absent
	// Output: a decision the program may write, starting at Default
	// (the "leave it to NCCL" value).
	Output
)

func (s Source) String() string {
	switch s {
	case NCCL:
		return "nccl"
	case Shim:
		return "shim"
	case Absent:
		return "absent"
	case Output:
		return "output"
	}
	return fmt.Sprintf("Source(%d)", s)
}

// Rule is one field's row, for one hook or for all of a context's hooks.
type Rule struct {
	// Field is the member's C name.
	Field string
	// Hook restricts the rule to one hook; "" is every hook of the
	// context that has no rule of its own for the field.
	Hook string
	// Since is the first version with Source; before it the field is
	// Before. 0: every version.
	Since  int
	Source Source
	// Before is the source in versions older than Since (Absent or
	// Shim).
	Before Source
	// Default is the value of an Absent field, or an Output's start.
	Default int64
}

// At returns the field's source and default value in version v.
func (r Rule) At(v int) (Source, int64) {
	if r.Since != 0 && v < r.Since {
		return r.Before, r.Default
	}
	return r.Source, r.Default
}

// Hook is a hook of a context, and the first version whose NCCL runs it.
type Hook struct {
	Name  string
	Since int
}

// Context is one hook context of an interface.
type Context struct {
	// Struct is the C struct name (hook.Context.Name).
	Struct string
	Hooks  []Hook
	Rules  []Rule
}

// Interface is one of NCCL's plugin interfaces as the shim serves it.
type Interface struct {
	// Name: "tuner", "profiler", "net".
	Name string
	// Oldest and Newest are the versions NCCL may call the shim with.
	Oldest, Newest int
	// WrapsOldest and WrapsNewest (net only) are the versions of the
	// plugin the shim wraps; they change no context field.
	WrapsOldest, WrapsNewest int
	Contexts                 []Context
}

// Rule returns the rule of field for hook, or false when the context has
// none.
func (c *Context) Rule(field, hook string) (Rule, bool) {
	var any *Rule
	for i := range c.Rules {
		r := &c.Rules[i]
		if r.Field != field {
			continue
		}
		if r.Hook == hook {
			return *r, true
		}
		if r.Hook == "" {
			any = r
		}
	}
	if any == nil {
		return Rule{}, false
	}
	return *any, true
}

// Runs reports whether NCCL of version v runs hook.
func (c *Context) Runs(hook string, v int) bool {
	for _, h := range c.Hooks {
		if h.Name == hook {
			return v >= h.Since
		}
	}
	return false
}

// Fields returns the names of the fields the context has rules for, in
// the order of their first rule.
func (c *Context) Fields() []string {
	seen := map[string]bool{}
	var out []string
	for _, r := range c.Rules {
		if !seen[r.Field] {
			seen[r.Field] = true
			out = append(out, r.Field)
		}
	}
	return out
}

// ForStruct returns the context called name (a C struct) and its
// interface, or nils.
func ForStruct(name string) (*Interface, *Context) {
	for _, in := range Interfaces {
		for i := range in.Contexts {
			if in.Contexts[i].Struct == name {
				return in, &in.Contexts[i]
			}
		}
	}
	return nil, nil
}

// Fill returns the source and default of field of the context struct for
// hook under version v, or an error naming what is unknown.
func Fill(structName, hook, field string, v int) (Source, int64, error) {
	in, c := ForStruct(structName)
	if c == nil {
		return 0, 0, fmt.Errorf("ctxfill: no context %s", structName)
	}
	if v < in.Oldest || v > in.Newest {
		return 0, 0, fmt.Errorf("ctxfill: %s: version %d is not served (%s v%d to v%d)", structName, v, in.Name, in.Oldest, in.Newest)
	}
	r, ok := c.Rule(field, hook)
	if !ok {
		return 0, 0, fmt.Errorf("ctxfill: %s has no field %s", structName, field)
	}
	s, d := r.At(v)
	return s, d, nil
}

// Interfaces are the three interfaces whose calls run programs.
var Interfaces = []*Interface{Tuner, Profiler, Net}

// Tuner is NCCL's tuner interface, ncclTunerPlugin_v2 to _v7
// (plugin/tuner.c: nb_init, nb_fill, nb_get_coll_info_v2,
// nb_get_chunk_size).
var Tuner = &Interface{
	Name: "tuner", Oldest: 2, Newest: 7,
	Contexts: []Context{{
		Struct: "ncclbpf_tuner_ctx",
		Hooks:  []Hook{{"tuner", 2}},
		Rules: []Rule{
			{Field: "comm_id", Since: 5, Source: NCCL, Before: Absent, Default: 0}, // init's commId
			{Field: "call_seq", Source: Shim},
			{Field: "n_bytes", Source: NCCL},
			{Field: "coll_type", Source: NCCL},
			{Field: "num_pipe_ops", Source: NCCL},
			{Field: "reg_buff", Since: 4, Source: NCCL, Before: Absent, Default: -1},
			{Field: "n_ranks", Source: NCCL},
			{Field: "n_nodes", Source: NCCL},
			{Field: "n_nvl_domains", Since: 5, Source: NCCL, Before: Absent, Default: -1}, // init's ncclNvlDomainInfo
			{Field: "min_ranks_per_nvl_domain", Since: 5, Source: NCCL, Before: Absent, Default: -1},
			{Field: "max_ranks_per_nvl_domain", Since: 5, Source: NCCL, Before: Absent, Default: -1},
			{Field: "abi_version", Source: Shim},
			{Field: "avail_mask", Source: Shim}, // from the cost table
			// v2 passes no table: the shim builds one from collNetSupport and nvlsSupport.
			{Field: "cost", Since: 3, Source: NCCL, Before: Shim},
			{Field: "algorithm", Source: Output, Default: -1},
			{Field: "protocol", Source: Output, Default: -1},
			{Field: "n_channels", Source: Output, Default: 0},
		},
	}, {
		Struct: "ncclbpf_chunk_ctx",
		Hooks:  []Hook{{"tuner/chunk_size", 6}},
		Rules: []Rule{
			{Field: "comm_id", Source: NCCL},
			{Field: "call_seq", Source: Shim},
			{Field: "n_bytes", Source: NCCL},
			{Field: "chunk_size", Source: NCCL},
			{Field: "coll_type", Source: NCCL},
			{Field: "algorithm", Source: NCCL},
			{Field: "protocol", Source: NCCL},
			{Field: "n_channels", Source: NCCL},
			{Field: "n_ranks", Source: NCCL},
			{Field: "n_nodes", Source: NCCL},
			{Field: "new_chunk_size", Source: Output, Default: 0},
		},
	}},
}

// Profiler hooks, by name (hook.Profiler*; this package depends on no
// other).
const (
	profCollEnd     = "profiler/coll_end"
	profP2pEnd      = "profiler/p2p_end"
	profKernelChEnd = "profiler/kernel_ch_end"
	profProxyOpEnd  = "profiler/proxy_op_end"
	profPhaseEnd    = "profiler/kernel_phase_end"
)

// Profiler is NCCL's profiler interface, ncclProfiler_v1 to _v7
// (plugin/profiler*.c: init_common, the start adapters, start_common,
// fill_ctx). A kernel channel, proxy operation or kernel phase has its
// task's identity fields (comm_id, seq, bytes, func, algorithm, protocol,
// n_channels and the v7 fields): NCCL's, passed with the task.
var Profiler = &Interface{
	Name: "profiler", Oldest: 1, Newest: 7,
	Contexts: []Context{{
		Struct: "ncclbpf_prof_ctx",
		Hooks: []Hook{{profCollEnd, 1}, {profP2pEnd, 1}, {profKernelChEnd, 3}, {profProxyOpEnd, 1},
			{profPhaseEnd, 7}},
		Rules: []Rule{
			{Field: "comm_id", Since: 4, Source: NCCL, Before: Absent, Default: 0},
			{Field: "seq", Source: NCCL},
			{Field: "seq", Hook: profP2pEnd, Source: Absent, Default: 0},
			{Field: "local_seq", Source: Shim},
			{Field: "bytes", Source: NCCL},
			{Field: "rank", Source: NCCL},
			{Field: "n_ranks", Since: 4, Source: NCCL, Before: Absent, Default: 0},
			{Field: "func", Source: NCCL},
			{Field: "algorithm", Source: NCCL},
			{Field: "algorithm", Hook: profP2pEnd, Source: Absent, Default: -1},
			{Field: "protocol", Source: NCCL},
			{Field: "protocol", Hook: profP2pEnd, Source: Absent, Default: -1},
			{Field: "n_channels", Source: NCCL}, // nMaxChannels before v4, nChannels from v4
			{Field: "n_channels", Hook: profP2pEnd, Since: 4, Source: NCCL, Before: Absent, Default: 0},
			{Field: "peer", Source: Absent, Default: -1},
			{Field: "peer", Hook: profP2pEnd, Source: NCCL},
			{Field: "peer", Hook: profProxyOpEnd, Source: NCCL},
			{Field: "channel_id", Source: Absent, Default: -1},
			{Field: "channel_id", Hook: profKernelChEnd, Source: NCCL},
			{Field: "channel_id", Hook: profProxyOpEnd, Source: NCCL},
			{Field: "channel_id", Hook: profPhaseEnd, Source: NCCL},
			{Field: "start_ns", Source: Shim},
			{Field: "end_ns", Source: Shim},
			{Field: "duration_ns", Source: Shim},
			// GPU timer stamps come with kernel channels from v4 on.
			{Field: "gpu_duration_ns", Since: 4, Source: NCCL, Before: Absent, Default: 0},
			{Field: "gpu_duration_ns", Hook: profProxyOpEnd, Source: Absent, Default: 0},
			{Field: "xfer_bytes", Source: Absent, Default: 0},
			{Field: "xfer_bytes", Hook: profProxyOpEnd, Source: NCCL},
			{Field: "n_children", Source: Shim},
			{Field: "is_send", Source: Absent, Default: -1},
			{Field: "is_send", Hook: profProxyOpEnd, Source: NCCL},
			{Field: "event", Source: Shim},
			{Field: "flags", Source: Shim},
			{Field: "abi_version", Source: Shim},
			{Field: "reserved", Source: Absent, Default: 0},
			{Field: "user_tag", Since: 7, Source: NCCL, Before: Absent, Default: 0},
			{Field: "kernel_variant", Since: 7, Source: NCCL, Before: Absent, Default: 0},
			{Field: "kernel_variant", Hook: profP2pEnd, Source: Absent, Default: 0},
			{Field: "is_sym_coll", Since: 7, Source: NCCL, Before: Absent, Default: 0},
			{Field: "is_sym_coll", Hook: profP2pEnd, Source: Absent, Default: 0},
			{Field: "phase_id", Source: Absent, Default: -1},
			{Field: "phase_id", Hook: profPhaseEnd, Source: NCCL},
			{Field: "reserved2", Source: Absent, Default: 0},
		},
	}},
}

const (
	netConn    = "net/conn"
	netSendEnd = "net/send_end"
	netRecvEnd = "net/recv_end"
)

// Net is NCCL's net interface as the wrapper exports it, ncclNetPlugin_v8
// to _v12, around a plugin of v6 to v12 (plugin/net*.c: conn_event,
// complete_on). Only the version NCCL calls with changes a field.
var Net = &Interface{
	Name: "net", Oldest: 8, Newest: 12, WrapsOldest: 6, WrapsNewest: 12,
	Contexts: []Context{{
		Struct: "ncclbpf_net_ctx",
		Hooks:  []Hook{{netConn, 8}, {netSendEnd, 8}, {netRecvEnd, 8}},
		Rules: []Rule{
			{Field: "comm_id", Since: 11, Source: NCCL, Before: Absent, Default: 0}, // init's commId
			{Field: "peer_key", Source: Shim},                                       // a hash of the listener's handle
			{Field: "conn_id", Source: Shim},
			{Field: "bytes", Source: NCCL}, // the sizes test reports
			{Field: "bytes", Hook: netConn, Source: Absent, Default: 0},
			{Field: "posted_bytes", Source: NCCL},
			{Field: "posted_bytes", Hook: netConn, Source: Absent, Default: 0},
			{Field: "start_ns", Source: Shim},
			{Field: "end_ns", Source: Shim},
			{Field: "duration_ns", Source: Shim},
			{Field: "local_seq", Source: Shim},
			{Field: "tag", Source: NCCL},
			{Field: "tag", Hook: netConn, Source: Absent, Default: -1},
			{Field: "n", Source: NCCL},
			{Field: "n", Hook: netConn, Source: Absent, Default: 0},
			{Field: "dev", Source: NCCL},
			{Field: "kind", Source: Absent, Default: 0},
			{Field: "kind", Hook: netConn, Source: Shim}, // which of listen, connect, accept
			{Field: "event", Source: Shim},
			{Field: "flags", Source: Shim},
			{Field: "abi_version", Source: Shim},
			{Field: "reserved", Source: Absent, Default: 0},
		},
	}},
}
