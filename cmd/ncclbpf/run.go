package main

import (
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/ncclbpf/ncclbpf/bundle"
	"github.com/ncclbpf/ncclbpf/helpers"
	"github.com/ncclbpf/ncclbpf/hook"
	"github.com/ncclbpf/ncclbpf/loader"
	"github.com/ncclbpf/ncclbpf/maps"
	"github.com/ncclbpf/ncclbpf/nccl"
	"github.com/ncclbpf/ncclbpf/policies"
	"github.com/ncclbpf/ncclbpf/verifier"
	"github.com/ncclbpf/ncclbpf/vm"
)

func init() {
	register(&command{
		Name:    "run",
		Args:    "[--section S | --hook H] [--engine E] [--set FIELD=VALUE ...] [--json] OBJ",
		Summary: "run a policy offline on a context you describe: no GPU, no NCCL",
		Help: `Loads OBJ as the plugin does (every program verified against its hook;
maps, --var settings and a --rules table shared by the bundle), builds the
context of one program's hook from its field descriptions, runs the program
and prints r0, every output field with what it means, and the maps the run
changed (decoded with the object's BTF, before -> after).

OBJ is a .bpf.o file or builtin:NAME (` + strings.Join(policies.Names(), ", ") + `).

Which program: the one of --section (a section or program name), the one
attached to --hook, the only one, or else the tuner program (a note says
so). --hook also verifies a program whose section names no hook, or another
hook, against that hook's context.

The context starts from the values a typical call has (--fields lists the
fields; the output shows every input), then:
  --coll, --bytes, --ranks, --nodes   set the collective (coll_type or func),
                                      the size (n_bytes or bytes), ranks, nodes
  --set FIELD=VALUE                   any field by its C name: n_bytes=4MiB,
                                      coll_type=allreduce, algorithm=ring,
                                      cost[1][2]=12.5 (or cost[5]=12.5)
Values are integers (decimal, 0x hex, negative, K/M/G or KiB/MiB/GiB
suffixes), names for collectives, algorithms and protocols, or, for the
tuner's cost cells, microseconds as a float ("na" or -1: unavailable; 0x...:
raw float bits).

Tuner contexts: by default the cost table is an illustrative model (latency
plus size over bandwidth) in which every cell is available and the cheapest
cell depends on --bytes and --ranks; it is not NCCL's model. --costs edits
it: ALGO=US sets a row, PROTO=US a column, ALGO/PROTO=US one cell, all=US
every cell, "none" makes every cell unavailable, e.g.
  --costs none,ring/simple=40,tree/ll=55     only two cells available
  --costs nvls=na,collnet_direct=na,collnet_chain=na
avail_mask, n_nvl_domains and the ranks per NVLink domain follow from the
other inputs unless set. The output ends with what the host would do with
the decision (the chosen cell must be available, channels are clamped to 64)
and what NCCL would have chosen without the policy.

Programs with no hook (generic, e.g. from the conformance corpus) run with
the interpreter only, unverified, with r1 = the --mem bytes and r2 = their
length as in the conformance format; they may call no helper that takes a
pointer. With a hook, --mem gives the raw initial context instead of the
typical values.

--repeat N runs the program N times on fresh copies of the context, the
sequence numbers (call_seq, seq, local_seq) counting up, and sums up the
distinct results; maps and their changes accumulate. Maps: only those that
changed (--maps all: every map; --maps none). Exit status 0 when the program
ran, 1 when the object, a value or the run failed, 2 for usage errors.`,
		Examples: []string{
			"ncclbpf run policies/size_aware.bpf.o --coll allreduce --bytes 4MiB --ranks 8",
			"ncclbpf run builtin:size_aware --bytes 1MiB --json  # below size_lo: NCCL decides",
			"ncclbpf run policies/size_aware.bpf.o --var size_lo=512K --bytes 1MiB",
			"ncclbpf run builtin:rules --rules rules.csv --coll allgather --bytes 64K --nodes 2 --ranks 16",
			"ncclbpf run policies/size_aware.bpf.o --costs ring/simple=na --bytes 4MiB  # Ring/Simple unavailable",
			"ncclbpf run policies/latency_stats/latency_stats.bpf.o --set func=allreduce --set duration_ns=250000 --repeat 3",
			"ncclbpf run --hook profiler/coll_end --fields  # list a hook's context fields",
			"ncclbpf run prog.o --section test --mem '01 00 00 00 ff'  # a generic program",
		},
		Run: runRun,
	})
}

// listFlag collects every occurrence of a repeatable flag, in order.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, " ") }
func (l *listFlag) Set(s string) error { *l = append(*l, s); return nil }

type runOptions struct {
	section, hookName, engine, mem, rules, maps string
	coll, bytes, ranks, nodes, costs            string
	sets, vars                                  listFlag
	repeat                                      int
	json, fields                                bool
}

func runRun(e *env, args []string) error {
	var o runOptions
	fs := e.flags()
	fs.StringVar(&o.section, "section", "", "run the program of this `SECTION` (or with this name)")
	fs.StringVar(&o.hookName, "hook", "", "run the program attached to this `HOOK`, or verify the chosen program against it")
	fs.StringVar(&o.engine, "engine", defaultEngine, "engine: "+strings.Join(engineNames(), ", ")+" (interp traps bad memory accesses)")
	fs.Var(&o.sets, "set", "set a context field by its C name, `FIELD=VALUE`: n_bytes=4MiB, algorithm=ring, cost[1][2]=12.5 (repeatable)")
	fs.StringVar(&o.coll, "coll", "", "collective `NAME`: broadcast, reduce, allgather, reducescatter, allreduce (profiler: also sendrecv, send, recv, alltoall)")
	fs.StringVar(&o.bytes, "bytes", "", "`SIZE` of the collective in bytes, e.g. 4MiB or 65536")
	fs.StringVar(&o.ranks, "ranks", "", "`N` ranks in the communicator")
	fs.StringVar(&o.nodes, "nodes", "", "`N` nodes spanned by the communicator")
	fs.StringVar(&o.costs, "costs", "", "edit the tuner's cost table: a `LIST` of ALGO=US, PROTO=US, ALGO/PROTO=US, all=US, none (US: microseconds or na)")
	fs.StringVar(&o.mem, "mem", "", "`HEX` bytes: r1/r2 of a generic program, or the raw initial context (@FILE reads them from FILE)")
	fs.Var(&o.vars, "var", "set a global variable of the object (a volatile const tunable), `NAME=VALUE` (repeatable)")
	fs.StringVar(&o.rules, "rules", "", "fill the rules policy's table from this `FILE` (NCCL's example CSV tuner format)")
	fs.IntVar(&o.repeat, "repeat", 1, "run `N` times, sequence numbers counting up")
	fs.StringVar(&o.maps, "maps", "changed", "maps to show: changed, all or none")
	fs.BoolVar(&o.json, "json", false, "print one JSON object instead of text")
	fs.BoolVar(&o.fields, "fields", false, "list the context fields of the program's hook (or of --hook) and exit")
	args, err := e.parse(fs, args)
	if err != nil {
		return err
	}
	if o.fields && len(args) == 0 && o.hookName != "" {
		h, err := lookupHook(o.hookName)
		if err != nil {
			return err
		}
		writeFields(e.Stdout, h)
		return nil
	}
	if len(args) != 1 {
		return usageErrorf("want one object file, got %d arguments", len(args))
	}
	if o.repeat < 1 {
		return usageErrorf("--repeat %d: want at least 1", o.repeat)
	}
	if o.maps != "changed" && o.maps != "all" && o.maps != "none" {
		return usageErrorf("--maps %q: want changed, all or none", o.maps)
	}
	engine, err := newEngine(o.engine)
	if err != nil {
		return err
	}
	r, err := prepareRun(args[0], &o, engine)
	if err != nil {
		return err
	}
	defer r.close()
	if o.fields {
		if r.hook == nil {
			return fmt.Errorf("program %s (section %q) has no hook, hence no context fields; name one with --hook", r.prog.Name, r.prog.Section)
		}
		writeFields(e.Stdout, r.hook)
		return nil
	}
	rep, err := r.execute(&o)
	if err != nil {
		return err
	}
	if o.json {
		enc := json.NewEncoder(e.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	writeRunReport(e.Stdout, rep)
	return nil
}

func lookupHook(name string) (*hook.Hook, error) {
	if h := hook.Get(name); h != nil {
		return h, nil
	}
	var names []string
	for _, h := range hook.All() {
		names = append(names, h.Name)
	}
	return nil, usageErrorf("unknown hook %q; hooks: %s", name, strings.Join(names, ", "))
}

// ---- loading ------------------------------------------------------------------------------------

// runTarget is the loaded program with what it runs on.
type runTarget struct {
	object   string
	prog     *loader.ProgramSpec
	hook     *hook.Hook // nil: a generic program
	verified bool
	engine   string
	exec     vm.Executable
	maps     []*maps.Map
	notes    []string
	closers  []func() error
	ctx      []byte // the context (or --mem) template
	set      map[string]bool
}

func (r *runTarget) close() {
	for _, c := range r.closers {
		c()
	}
}

func readObject(path string) ([]byte, error) {
	if name, ok := strings.CutPrefix(path, "builtin:"); ok {
		obj, ok := policies.Object(name)
		if !ok {
			return nil, fmt.Errorf("%s: no such builtin policy (have: %s)", path, strings.Join(policies.Names(), ", "))
		}
		return obj, nil
	}
	return os.ReadFile(path)
}

func prepareRun(path string, o *runOptions, engine vm.Engine) (*runTarget, error) {
	var forced *hook.Hook
	if o.hookName != "" {
		h, err := lookupHook(o.hookName)
		if err != nil {
			return nil, err
		}
		forced = h
	}
	obj, err := readObject(path)
	if err != nil {
		return nil, err
	}
	spec, err := loader.LoadBytes(obj)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	r := &runTarget{object: path, engine: engine.Name()}
	var h *hook.Hook
	r.prog, h, err = selectProgram(spec, path, o.section, forced, &r.notes)
	if err != nil {
		return nil, err
	}
	r.hook = h
	vars, data, err := runVars(o)
	if err != nil {
		return nil, err
	}
	if spec, err = bundle.Configure(spec, vars, data); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if asBundle(spec, r.prog, h) {
		b, err := bundle.LoadSpec(spec, bundle.Options{Name: path, Engine: engine})
		if err != nil {
			return nil, explainLoad(err)
		}
		r.closers = append(r.closers, b.Close)
		for _, p := range b.Programs {
			if p.Name == r.prog.Name && p.Section == r.prog.Section {
				r.exec = p.Exec
			}
		}
		if r.exec == nil {
			b.Close()
			return nil, fmt.Errorf("%s: BUG: program %s is not in the loaded bundle", path, r.prog.Name)
		}
		r.maps, r.verified = b.Maps, true
	} else if err := r.loadAlone(spec, engine); err != nil {
		r.close()
		return nil, err
	}
	if err := r.buildContext(o); err != nil {
		r.close()
		return nil, err
	}
	return r, nil
}

// selectProgram picks the program to run and the hook whose context it
// gets (nil for none).
func selectProgram(coll *loader.CollectionSpec, path, section string, forced *hook.Hook, notes *[]string) (*loader.ProgramSpec, *hook.Hook, error) {
	sectionHook := func(p *loader.ProgramSpec) *hook.Hook {
		h, err := hook.ForSection(p.Section)
		if err != nil {
			return nil
		}
		return h
	}
	var all []string
	for _, p := range coll.Programs {
		all = append(all, fmt.Sprintf("%s (section %s)", p.Name, p.Section))
	}
	if len(coll.Programs) == 0 {
		return nil, nil, fmt.Errorf("%s: the object has no programs", path)
	}
	var cands []*loader.ProgramSpec
	switch {
	case section != "":
		for _, p := range coll.Programs {
			if p.Section == section || p.Name == section {
				cands = append(cands, p)
			}
		}
		if len(cands) == 0 {
			return nil, nil, fmt.Errorf("%s: no program in section %q; the object has: %s", path, section, strings.Join(all, ", "))
		}
		if len(cands) > 1 {
			var names []string
			for _, p := range cands {
				names = append(names, p.Name)
			}
			return nil, nil, usageErrorf("%s: %d programs in section %q (%s): choose one by name with --section NAME",
				path, len(cands), section, strings.Join(names, ", "))
		}
	case forced != nil:
		for _, p := range coll.Programs {
			if sectionHook(p) == forced {
				cands = append(cands, p)
			}
		}
		if len(cands) == 0 && len(coll.Programs) == 1 {
			cands = coll.Programs
		}
		if len(cands) != 1 {
			return nil, nil, usageErrorf("%s: %d programs attach to hook %s; the object has: %s; choose one with --section",
				path, len(cands), forced.Name, strings.Join(all, ", "))
		}
	case len(coll.Programs) == 1:
		cands = coll.Programs
	default:
		for _, p := range coll.Programs {
			if h := sectionHook(p); h != nil && h.Name == hook.Tuner {
				cands = append(cands, p)
			}
		}
		if len(cands) != 1 {
			return nil, nil, usageErrorf("%s has %d programs: %s; choose one with --section", path, len(coll.Programs), strings.Join(all, ", "))
		}
		*notes = append(*notes, fmt.Sprintf("%s has %d programs (%s); running the tuner program %s (choose another with --section)",
			path, len(coll.Programs), strings.Join(all, ", "), cands[0].Name))
	}
	p := cands[0]
	h := sectionHook(p)
	if forced != nil {
		if h != forced {
			what := "names no hook"
			if h != nil {
				what = "attaches to hook " + h.Name
			}
			*notes = append(*notes, fmt.Sprintf("section %q %s; program %s runs verified against hook %s as --hook says", p.Section, what, p.Name, forced.Name))
		}
		h = forced
	}
	return p, h, nil
}

// asBundle reports whether the object loads as the plugin loads it: every
// program attached to a distinct hook by its section, and the selected
// program run at the hook its section names.
func asBundle(coll *loader.CollectionSpec, sel *loader.ProgramSpec, h *hook.Hook) bool {
	seen := map[*hook.Hook]bool{}
	for _, p := range coll.Programs {
		ph, err := hook.ForSection(p.Section)
		if err != nil || seen[ph] {
			return false
		}
		seen[ph] = true
		if p == sel && ph != h {
			return false
		}
	}
	return true
}

// runVars turns --var and --rules into bundle settings.
func runVars(o *runOptions) ([]bundle.Var, map[string][]byte, error) {
	var vars []bundle.Var
	for _, s := range o.vars {
		name, val, ok := strings.Cut(s, "=")
		name, val = strings.TrimSpace(name), strings.TrimSpace(val)
		if !ok || name == "" {
			return nil, nil, usageErrorf("--var %q: want NAME=VALUE", s)
		}
		v, err := nccl.ParseInt(val)
		if err != nil {
			return nil, nil, fmt.Errorf("--var %s: %w", name, err)
		}
		vars = append(vars, bundle.Var{Name: name, Value: v})
	}
	data := map[string][]byte{}
	if o.rules != "" {
		rules, err := nccl.ParseRulesFile(o.rules)
		if err != nil {
			return nil, nil, err
		}
		table, err := nccl.RulesTable(rules)
		if err != nil {
			return nil, nil, fmt.Errorf("rules file %s: %w", o.rules, err)
		}
		data[nccl.RulesVar] = table
	}
	return vars, data, nil
}

// explainLoad turns a verifier rejection inside err into the form
// 'ncclbpf verify' prints; other errors pass through.
func explainLoad(err error) error {
	var ve *verifier.Error
	if !errors.As(err, &ve) {
		return err
	}
	head := err.Error()
	if i := strings.LastIndex(head, ve.Error()); i > 0 {
		head = strings.TrimSuffix(strings.TrimSpace(head[:i]), ":")
	}
	return fmt.Errorf("%s by the verifier:\n%s%w", head, strings.TrimRight(ve.Explain(), "\n"), silentWrap{ve})
}

// silentWrap lets an error wrap another (%w) without adding text.
type silentWrap struct{ err error }

func (s silentWrap) Error() string { return "" }
func (s silentWrap) Unwrap() error { return s.err }

// loadAlone loads only the selected program, for objects the plugin would
// not take as a bundle (a section without a hook, two programs for one
// hook) or a program run at another hook than its section's. It takes
// bundle.Load's steps: the program is verified together with the others
// (each at its section's hook), then the maps are created and the program
// compiled.
func (r *runTarget) loadAlone(spec *loader.CollectionSpec, engine vm.Engine) error {
	p := r.prog
	table := maps.HelperTable()
	if r.hook != nil {
		if err := verifyInBundle(spec, p, r.hook); err != nil {
			return explainLoad(fmt.Errorf("%s: program %s (section %q, hook %s) rejected: %w", r.object, p.Name, p.Section, r.hook.Name, err))
		}
		r.verified = true
	} else {
		if engine.Name() != "interp" {
			return usageErrorf("program %s (section %q) has no hook, so it is not verified: it runs only with --engine interp "+
				"(or give --hook to verify it against a hook)", p.Name, p.Section)
		}
		for id, h := range table {
			if !scalarHelper(h.Proto) {
				delete(table, id)
			}
		}
		r.notes = append(r.notes, fmt.Sprintf("section %q names no hook: program %s runs unverified with the interpreter "+
			"(helpers that take pointers are not available; give --hook to verify it against a hook)", p.Section, p.Name))
	}
	live, _, err := bundle.CreateMaps(spec, nil)
	if err != nil {
		return fmt.Errorf("%s: %w", r.object, err)
	}
	for _, m := range live {
		r.closers = append(r.closers, m.Close)
	}
	r.maps = live
	exe, err := bundle.Compile(engine, p, live, table)
	if err != nil && r.hook == nil {
		return fmt.Errorf("%s: program %s: compile with %s: %w (unverified programs may call only helpers "+
			"that take no pointers; give --hook to verify it against a hook)", r.object, p.Name, engine.Name(), err)
	}
	if err != nil {
		return fmt.Errorf("%s: program %s: compile with %s: %w", r.object, p.Name, engine.Name(), err)
	}
	r.closers = append([]func() error{exe.Close}, r.closers...)
	r.exec = exe
	return nil
}

// scalarHelper reports whether a helper takes scalars only, so that an
// unverified program cannot hand it a bad pointer.
func scalarHelper(p *helpers.Proto) bool {
	if p == nil {
		return false
	}
	for _, a := range p.Args {
		if a != helpers.ArgNone && a != helpers.ArgAnything && a != helpers.ArgScalar {
			return false
		}
	}
	return true
}

// ---- the context ----------------------------------------------------------------------------------

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
		"n_children=1", "is_send=-1", "abi_version=5"},
	hook.ProfilerP2pEnd:      {"func=send", "peer=1", "algorithm=-1", "protocol=-1", "n_channels=1"},
	hook.ProfilerKernelChEnd: {"channel_id=0"},
	hook.ProfilerProxyOpEnd:  {"channel_id=0", "peer=1", "is_send=1", "xfer_bytes=1MiB"},
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
func (r *runTarget) buildContext(o *runOptions) error {
	var raw []byte
	if o.mem != "" {
		b, err := parseHexMem(o.mem)
		if err != nil {
			return err
		}
		raw = b
	}
	if r.hook == nil {
		if len(o.sets) > 0 || o.coll != "" || o.bytes != "" || o.ranks != "" || o.nodes != "" || o.costs != "" {
			return usageErrorf("program %s has no hook, hence no context fields: give its memory with --mem, or a hook with --hook", r.prog.Name)
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
	aliases := []struct {
		flag, val string
		fields    []string
	}{
		{"coll", o.coll, []string{"coll_type", "func"}},
		{"bytes", o.bytes, []string{"n_bytes", "bytes"}},
		{"ranks", o.ranks, []string{"n_ranks"}},
		{"nodes", o.nodes, []string{"n_nodes"}},
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
	}
	var costSets []string
	for _, s := range o.sets {
		if strings.HasPrefix(strings.TrimSpace(s), "cost[") && c.Name == tunerCtxName {
			costSets = append(costSets, s) // after the cost table exists
			continue
		}
		if err := r.setField(s, true); err != nil {
			return fmt.Errorf("--set %s", err)
		}
	}
	if c.Name == tunerCtxName {
		if o.costs != "" && raw == nil {
			r.set["cost"] = true
		}
		if raw == nil {
			r.fillModelCosts()
		}
		if o.costs != "" {
			if err := r.applyCosts(o.costs); err != nil {
				return fmt.Errorf("--costs %s: %w", o.costs, err)
			}
		}
		for _, s := range costSets {
			if err := r.setField(s, true); err != nil {
				return fmt.Errorf("--set %s", err)
			}
		}
	} else if o.costs != "" {
		return fmt.Errorf("--costs: hook %s has no cost table (only tuner programs do)", r.hook.Name)
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
		if _, err := nccl.ParseInt(val); err != nil {
			return 0, fmt.Errorf("want a number or one of %s", strings.Join(names, ", "))
		}
	}
	if c.Name == tunerCtxName && el.Field.Name == "cost" {
		bits, err := parseCost(val)
		return uint64(bits), err
	}
	return nccl.ParseInt(val)
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

// derive fills the fields that follow from others, unless set.
func (r *runTarget) derive() {
	switch r.hook.Context.Name {
	case tunerCtxName:
		nodes, ranks := r.get("n_nodes"), r.get("n_ranks")
		if r.get("abi_version") >= 5 {
			r.put("n_nvl_domains", nodes) // NCCL sets it to n_nodes
			if d := r.get("n_nvl_domains"); d > 0 {
				r.put("min_ranks_per_nvl_domain", ranks/d)
				r.put("max_ranks_per_nvl_domain", (ranks+d-1)/d)
			}
		} else {
			if r.get("abi_version") < 4 {
				r.put("reg_buff", -1) // v2, v3: NCCL does not say
			}
			r.put("n_nvl_domains", -1)
			r.put("min_ranks_per_nvl_domain", -1)
			r.put("max_ranks_per_nvl_domain", -1)
		}
		var mask int64
		for i := 0; i < 21; i++ {
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

// The illustrative cost model: latency (µs) and bandwidth (GB/s) per
// algorithm and protocol factors. Only the ordering it produces matters:
// LL for small sizes, Simple for large ones, Tree before Ring when ranks
// grow.
var (
	modelLat = [7]func(ranks, nodes float64) float64{
		func(r, n float64) float64 { return 1.5 * math.Log2(max(r, 2)) },       // tree
		func(r, n float64) float64 { return 0.8 * (max(r, 2) - 1) },            // ring
		func(r, n float64) float64 { return 6 + n },                            // collnet_direct
		func(r, n float64) float64 { return 7 + n },                            // collnet_chain
		func(r, n float64) float64 { return 5 + 2*n },                          // nvls
		func(r, n float64) float64 { return 6 + 2*math.Log2(max(n, 1)) },       // nvls_tree
		func(r, n float64) float64 { return 1.2 * math.Log2(max(r, 2)) * 1.5 }, // pat
	}
	modelBW         = [7]float64{60, 80, 50, 45, 100, 90, 30}
	modelProtoLat   = [3]float64{0.4, 0.7, 1.5}
	modelProtoBWFac = [3]float64{0.5, 0.92, 1.0}
)

func (r *runTarget) fillModelCosts() {
	bytes := float64(uint64(r.get("n_bytes")))
	ranks, nodes := float64(r.get("n_ranks")), float64(r.get("n_nodes"))
	for a := 0; a < 7; a++ {
		for p := 0; p < 3; p++ {
			us := modelLat[a](ranks, nodes)*modelProtoLat[p] + bytes/(modelBW[a]*modelProtoBWFac[p]*1e3)
			r.setCost(a*3+p, math.Float32bits(float32(us)))
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
			for i := 0; i < 21; i++ {
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
		for a := 0; a < 7; a++ {
			out = append(out, a*3+p)
		}
		return out, nil
	}
	if name == "all" {
		for i := 0; i < 21; i++ {
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

// ---- running --------------------------------------------------------------------------------------

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

func (r *runTarget) execute(o *runOptions) (*runReport, error) {
	rep := &runReport{Object: r.object, Program: r.prog.Name, Section: r.prog.Section, Verified: r.verified,
		Engine: r.engine, Notes: r.notes, Runs: o.repeat}
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
	if o.maps != "none" {
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
			if o.repeat > 1 {
				for i := range rep.Inputs {
					if rep.Inputs[i].Name == el.Name {
						rep.Inputs[i].Meaning = fmt.Sprintf("counts up to %d over the runs", el.Get(r.ctx)+uint64(o.repeat-1))
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
	for i := 0; i < o.repeat; i++ {
		copy(buf, r.ctx)
		for _, el := range seqs {
			el.Put(buf, el.Get(r.ctx)+uint64(i))
		}
		start := time.Now()
		r0, err := r.exec.Run(buf)
		elapsed += time.Since(start)
		if err != nil {
			return nil, fmt.Errorf("program %s: run %d of %d: %w", r.prog.Name, i+1, o.repeat, err)
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
	rep.NsPerRun = float64(elapsed.Nanoseconds()) / float64(o.repeat)
	if o.repeat == 1 {
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
	if o.maps != "none" {
		for i, m := range r.maps {
			mr, err := reportMap(m, before[i], o.maps == "all")
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
		case s > 64:
			f.Meaning = "more than NCCL accepts: the host uses 64"
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
		f.Meaning = fmt.Sprintf("%d of 21 cells available", popcount(uint32(u)&(1<<21-1)))
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

// tunerEffect applies the host's rules to the decision in ctx (nccl.Apply,
// the Go mirror of plugin/tuner.c): what NCCL ends up running, and what it
// would run without a policy.
func (r *runTarget) tunerEffect(r0 uint64, ctx []byte) *tunerEff {
	var table [nccl.Cells]float32
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
	na, np := nccl.Pick(table)
	eff := &tunerEff{NCCL: cell(na, np), Algorithm: "nccl", Protocol: "nccl"}
	if na >= 0 {
		eff.NCCL += " (" + costText(math.Float32bits(table[na*3+np])) + ", the cheapest available cell)"
	}
	nccl0 := "NCCL decides: " + cell(na, np) + " with its own channel count"
	d, err := nccl.DecodeDecision(ctx)
	if err != nil {
		eff.Text = err.Error()
		return eff
	}
	partial := (d.Algorithm >= 0) != (d.Protocol >= 0)
	abi, _ := r.elem("abi_version")
	out := nccl.ApplyABI(table, r0, d, int(abi.Signed(ctx)))
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

// ---- printing -------------------------------------------------------------------------------------

func writeRunReport(w io.Writer, rep *runReport) {
	verified := "verified"
	if !rep.Verified {
		verified = "NOT verified"
	}
	if rep.Hook != "" {
		fmt.Fprintf(w, "program %s (section %s, hook %s, %s) from %s, engine %s\n", rep.Program, rep.Section, rep.Hook, verified, rep.Object, rep.Engine)
	} else {
		fmt.Fprintf(w, "program %s (section %s, no hook, %s) from %s, engine %s\n", rep.Program, rep.Section, verified, rep.Object, rep.Engine)
	}
	for _, n := range rep.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	if rep.Hook != "" {
		fmt.Fprintf(w, "inputs (struct %s):\n", rep.Context)
		writeFieldsText(w, rep.Inputs, rep.costGrid)
	} else {
		fmt.Fprintf(w, "mem: %d bytes (r1 = its address, r2 = %d)%s\n", len(rep.Mem)/2, len(rep.Mem)/2, hexLines(rep.Mem, "  "))
	}
	if rep.Runs > 1 {
		distinct := strconv.Itoa(len(rep.Outcomes))
		if rep.OtherRuns > 0 {
			distinct = "more than " + distinct
		}
		fmt.Fprintf(w, "runs: %d, %s per run, %s distinct result(s):\n", rep.Runs, nsText(rep.NsPerRun), distinct)
		for i, oc := range rep.Outcomes {
			if i == 16 {
				fmt.Fprintf(w, "  ... %d more (--json lists %d)\n", len(rep.Outcomes)-i, len(rep.Outcomes))
				break
			}
			var outs []string
			for _, f := range oc.Outputs {
				outs = append(outs, fmt.Sprintf("%s=%v", f.Name, f.Value))
			}
			fmt.Fprintf(w, "  %d× (first: run %d) r0 = %s\n", oc.Count, oc.FirstRun,
				strings.Join(append([]string{strconv.FormatInt(int64(oc.R0), 10)}, outs...), " "))
		}
		fmt.Fprintln(w, "last run:")
	} else {
		fmt.Fprintln(w, "result:")
	}
	r0 := strconv.FormatUint(rep.R0, 10)
	if rep.R0Signed < 0 {
		r0 = fmt.Sprintf("%d (%#x)", rep.R0Signed, rep.R0)
	}
	if rep.R0Means != "" {
		r0 += "  " + rep.R0Means
	}
	fmt.Fprintf(w, "  r0 = %s\n", r0)
	writeFieldsText(w, rep.Outputs, false)
	if rep.MemAfter != "" {
		fmt.Fprintf(w, "  mem after the run:%s\n", hexLines(rep.MemAfter, "    "))
	}
	if rep.Effect != nil {
		fmt.Fprintf(w, "effect: %s\n", rep.Effect.Text)
		fmt.Fprintf(w, "without the policy NCCL would run %s\n", rep.Effect.NCCL)
	}
	for _, l := range rep.Printk {
		fmt.Fprintf(w, "printk: %s\n", l)
	}
	if len(rep.Maps) == 0 {
		fmt.Fprintln(w, "maps: none changed")
	}
	for _, m := range rep.Maps {
		writeMapText(w, &m)
	}
}

func nsText(ns float64) string {
	if ns >= 1e4 {
		return time.Duration(ns).Round(time.Microsecond / 10).String()
	}
	return strconv.FormatFloat(ns, 'f', 0, 64) + "ns"
}

func hexLines(h, indent string) string {
	var b strings.Builder
	for i := 0; i < len(h); i += 32 {
		b.WriteString("\n" + indent)
		for j := i; j < min(i+32, len(h)); j += 2 {
			if j > i {
				b.WriteByte(' ')
			}
			b.WriteString(h[j : j+2])
		}
	}
	return b.String()
}

// writeFieldsText prints fields one per line, aligned; the tuner's cost
// cells as a table.
func writeFieldsText(w io.Writer, fields []runField, costGrid bool) {
	width := 0
	for _, f := range fields {
		if !(costGrid && strings.HasPrefix(f.Name, "cost[")) {
			width = max(width, len(f.Name))
		}
	}
	var cost []runField
	for _, f := range fields {
		if costGrid && strings.HasPrefix(f.Name, "cost[") {
			cost = append(cost, f)
			continue
		}
		v := fmt.Sprint(f.Value)
		if f.Name == "comm_id" || f.Name == "avail_mask" || f.Name == "flags" {
			v = fmt.Sprintf("%#x", f.raw)
		}
		if f.Meaning != "" {
			fmt.Fprintf(w, "  %-*s = %-10s %s\n", width, f.Name, v, f.Meaning)
		} else {
			fmt.Fprintf(w, "  %-*s = %s\n", width, f.Name, v)
		}
	}
	if len(cost) == 21 {
		fmt.Fprintf(w, "  %-16s", "cost (µs)")
		for _, p := range hook.ProtoNames {
			fmt.Fprintf(w, " %12s", p)
		}
		fmt.Fprintln(w)
		for a := 0; a < 7; a++ {
			fmt.Fprintf(w, "    %-14s", hook.AlgoNames[a])
			for p := 0; p < 3; p++ {
				c := strings.TrimSuffix(cost[a*3+p].Meaning, " µs")
				if c == "unavailable" {
					c = "n/a"
				}
				fmt.Fprintf(w, " %12s", c)
			}
			fmt.Fprintln(w)
		}
	}
}

func writeMapText(w io.Writer, m *mapReport) {
	d := m.dump
	if m.Type == maps.RingBuf.String() {
		fmt.Fprintf(w, "map %s (%s, %d bytes): %d record(s) submitted\n", m.Name, m.Type, d.MaxEntries, len(m.Records))
		for i, r := range m.Records {
			fmt.Fprintf(w, "  record %d (%d bytes):%s\n", i, len(r)/2, hexLines(r, "    "))
		}
		return
	}
	state := "unchanged"
	if m.Changed {
		state = "changed"
	}
	fmt.Fprintf(w, "map %s (%s, key %d bytes, value %d bytes, %d -> %d/%d entries) %s:\n",
		m.Name, m.Type, d.KeySize, d.ValueSize, len(m.Before), len(m.After), d.MaxEntries, state)
	old := map[string]maps.Entry{}
	for _, e := range m.Before {
		old[keyText(e.Key)] = e
	}
	cur := map[string]bool{}
	const maxLines = 32
	lines := 0
	emit := func(s string) {
		if lines < maxLines {
			fmt.Fprintln(w, s)
		}
		lines++
	}
	for _, e := range m.After {
		k := keyText(e.Key)
		cur[k] = true
		o, had := old[k]
		switch {
		case !had:
			emit("  + " + k + ": " + clip(maps.FormatValue(e.Value)))
		case !sameJSON(o.Value, e.Value):
			var diffs []string
			diffValues("", o.Value, e.Value, &diffs)
			if len(diffs) > 8 {
				diffs = append(diffs[:8], fmt.Sprintf("... %d more", len(diffs)-8))
			}
			emit("  ~ " + k + ": " + strings.Join(diffs, ", "))
		default:
			if !m.Changed {
				emit("    " + k + ": " + clip(maps.FormatValue(e.Value)))
			}
		}
	}
	for _, e := range m.Before {
		if k := keyText(e.Key); !cur[k] {
			emit("  - " + k + ": " + clip(maps.FormatValue(e.Value)))
		}
	}
	if lines > maxLines {
		fmt.Fprintf(w, "  ... %d more lines (--json has everything)\n", lines-maxLines)
	}
}

// keyText formats a decoded key; keys without BTF (array indexes, the
// single entry of a global data section) show as numbers.
func keyText(k any) string {
	if b, ok := k.(maps.Bytes); ok {
		switch len(b) {
		case 0:
			return "0"
		case 4:
			return strconv.FormatUint(uint64(binary.LittleEndian.Uint32(b)), 10)
		}
	}
	return maps.FormatValue(k)
}

func clip(s string) string {
	const max = 400
	if len(s) <= max {
		return s
	}
	return s[:max] + fmt.Sprintf("... (%d more characters)", len(s)-max)
}

// diffValues lists "path: old -> new" for the leaves that differ.
func diffValues(path string, a, b any, out *[]string) {
	switch x := a.(type) {
	case maps.Struct:
		if y, ok := b.(maps.Struct); ok && len(x) == len(y) {
			for i := range x {
				p := x[i].Name
				if path != "" && !strings.HasSuffix(path, " ") {
					p = path + "." + p
				} else {
					p = path + p
				}
				diffValues(p, x[i].Value, y[i].Value, out)
			}
			return
		}
	case []any:
		if y, ok := b.([]any); ok && len(x) == len(y) {
			for i := range x {
				diffValues(fmt.Sprintf("%s[%d]", path, i), x[i], y[i], out)
			}
			return
		}
	case maps.PerCPU:
		if y, ok := b.(maps.PerCPU); ok {
			xs := map[int]any{}
			for _, s := range x {
				xs[s.Slot] = s.Value
			}
			ys := map[int]bool{}
			for _, s := range y {
				ys[s.Slot] = true
				old, ok := xs[s.Slot]
				if !ok { // all-zero slots are not listed
					old = zeroLike(s.Value)
				}
				diffValues(fmt.Sprintf("%sslot %d ", pathDot(path), s.Slot), old, s.Value, out)
			}
			for _, s := range x {
				if !ys[s.Slot] {
					diffValues(fmt.Sprintf("%sslot %d ", pathDot(path), s.Slot), s.Value, zeroLike(s.Value), out)
				}
			}
			return
		}
	}
	if sameJSON(a, b) {
		return
	}
	path = strings.TrimSpace(path)
	if path == "" {
		*out = append(*out, clip(maps.FormatValue(a))+" -> "+clip(maps.FormatValue(b)))
		return
	}
	*out = append(*out, path+": "+clip(maps.FormatValue(a))+" -> "+clip(maps.FormatValue(b)))
}

// zeroLike returns a decoded value of v's shape with every leaf zero.
func zeroLike(v any) any {
	switch v := v.(type) {
	case maps.Struct:
		z := make(maps.Struct, len(v))
		for i, f := range v {
			z[i] = maps.Field{Name: f.Name, Value: zeroLike(f.Value)}
		}
		return z
	case []any:
		z := make([]any, len(v))
		for i, e := range v {
			z[i] = zeroLike(e)
		}
		return z
	case maps.Bytes:
		return make(maps.Bytes, len(v))
	case int64:
		return int64(0)
	case uint64:
		return uint64(0)
	case float64:
		return float64(0)
	case bool:
		return false
	case string:
		return ""
	case maps.Pointer:
		return maps.Pointer(0)
	}
	return v
}

func pathDot(p string) string {
	if p == "" {
		return ""
	}
	return p + " "
}

// writeFields prints a hook's context layout for --fields.
func writeFields(w io.Writer, h *hook.Hook) {
	c := &h.Context
	fmt.Fprintf(w, "hook %s (sections %s): %s\n", h.Name, strings.Join(h.Sections, ", "), h.Doc)
	fmt.Fprintf(w, "context struct %s, %d bytes; returns %d..%d\n", c.Name, c.Size, h.Return.Min, h.Return.Max)
	fmt.Fprintf(w, "  %6s %4s  %-6s %-8s %s\n", "offset", "size", "access", "scope", "field")
	fs := append([]hook.Field(nil), c.Fields...)
	sort.SliceStable(fs, func(i, j int) bool { return fs[i].Offset < fs[j].Offset })
	for i := range fs {
		f := &fs[i]
		acc := "read"
		if f.Access&hook.Write != 0 {
			acc = "rw"
			if f.Access&hook.Read == 0 {
				acc = "write"
			}
		}
		scope := "uniform"
		if f.Scope == hook.RankLocal {
			scope = "local"
		}
		name := f.Name
		for _, d := range c.Dims(f) {
			name += fmt.Sprintf("[%d]", d)
		}
		extra := ""
		if names := hook.EnumNames(f.Name); names != nil {
			extra = "  (" + strings.Join(names, ", ") + ")"
		}
		fmt.Fprintf(w, "  %6d %4d  %-6s %-8s %s%s\n", f.Offset, f.Size, acc, scope, name, extra)
	}
	if d := defaultsFor(h); len(d) > 0 {
		fmt.Fprintf(w, "typical values used unless set: %s\n", strings.Join(d, " "))
	}
}
