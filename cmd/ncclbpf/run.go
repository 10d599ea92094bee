package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/ncclbpf/ncclbpf/bundle"
	"github.com/ncclbpf/ncclbpf/helpers"
	"github.com/ncclbpf/ncclbpf/hook"
	"github.com/ncclbpf/ncclbpf/internal/ncclabi"
	"github.com/ncclbpf/ncclbpf/loader"
	"github.com/ncclbpf/ncclbpf/maps"
	"github.com/ncclbpf/ncclbpf/plugin/config"
	"github.com/ncclbpf/ncclbpf/policies"
	"github.com/ncclbpf/ncclbpf/tuner"
	"github.com/ncclbpf/ncclbpf/verifier"
	"github.com/ncclbpf/ncclbpf/vm"
	"github.com/spf13/pflag"
)

func init() {
	register(&command{
		Use: "run [--section S | --hook H] [--engine E] [--coll C] [--bytes N] [--ranks N] [--nodes N] [--set FIELD=VALUE]... [--var NAME=VALUE]... [--json] OBJ\n" +
			"run --hook H --fields",
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

Tuner contexts: the cost table is what NCCL would hand the tuner for the
call: NCCL's own per-call model (latency per pipelined op plus bytes over
bandwidth, with its tree correction, ring plateau and unavailable cells)
over the latency and bandwidth tables NCCL prints at init. The built-in
tables are of one 8-GPU H100 node (a synthetic example in NCCL's format,
internal/ncclabi/testdata/default/tuning.log); --tuning-log LOG reads yours
from an NCCL log taken with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,TUNING
(its first communicator with tables; its ranks and nodes become the
defaults of --ranks and --nodes; docs/cost-model.md). --costs edits the
table: ALGO=US sets a row, PROTO=US a column, ALGO/PROTO=US one cell, all=US
every cell, "none" makes every cell unavailable, e.g.
  --costs none,ring/simple=40,tree/ll=55     only two cells available
  --costs nvls=na,collnet_direct=na,collnet_chain=na
avail_mask, n_nvl_domains and the ranks per NVLink domain follow from the
other inputs unless set. The output ends with what the host would do with
the decision (the chosen cell must be available, channels are clamped to 64)
and what NCCL would have chosen without the policy.

The program runs only when it is attached to a hook (by its section, or
--hook) and passes the verifier, as the plugin would load it; a rejection is
the verifier's located error. --unverified is for raw experiments: the
program runs without the verifier on the interpreter, which traps bad memory
accesses, may call only helpers that take no pointers, and the output says
UNVERIFIED. A program with no hook (generic, e.g. from the conformance
corpus) needs --unverified: it gets r1 = the --mem bytes and r2 = their
length as in the conformance format. With a hook, --mem gives the raw
initial context instead of the typical values.

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
			"ncclbpf run prog.o --unverified --section test --mem '01 00 00 00 ff'  # a generic program, no verifier",
		},
		Setup: func(fs *pflag.FlagSet) runFunc {
			var o runOptions
			runFlags(fs, &o)
			return func(e *env, args []string) error { return runRun(e, args, o) }
		},
	})
}

type runOptions struct {
	section, hookName, engine, mem, rules, maps string
	coll, bytes, ranks, nodes, costs            string
	tuningLog                                   string
	sets, vars                                  []string
	repeat                                      int
	json, fields, unverified                    bool
}

// runFlags declares the flags of run.
func runFlags(fs *pflag.FlagSet, o *runOptions) {
	fs.StringVar(&o.section, "section", "", "run the program of this `SECTION` (or with this name)")
	fs.StringVar(&o.hookName, "hook", "", "run the program attached to this `HOOK`, or verify the chosen program against it")
	fs.StringVar(&o.engine, "engine", defaultEngine, "`ENGINE` to run on: "+strings.Join(engineNames(), ", ")+" (interp traps bad memory accesses)")
	fs.StringArrayVar(&o.sets, "set", nil, "set a context field by its C name, `FIELD=VALUE`: n_bytes=4MiB, algorithm=ring, cost[1][2]=12.5 (repeatable)")
	fs.StringVar(&o.coll, "coll", "", "collective `NAME`: broadcast, reduce, allgather, reducescatter, allreduce (profiler: also sendrecv, send, recv, alltoall)")
	fs.StringVar(&o.bytes, "bytes", "", "`SIZE` of the collective in bytes, e.g. 4MiB or 65536")
	fs.StringVar(&o.ranks, "ranks", "", "`N` ranks in the communicator")
	fs.StringVar(&o.nodes, "nodes", "", "`N` nodes spanned by the communicator")
	fs.StringVar(&o.costs, "costs", "", "edit the tuner's cost table: a `LIST` of ALGO=US, PROTO=US, ALGO/PROTO=US, all=US, none (US: microseconds or na)")
	fs.StringVar(&o.tuningLog, "tuning-log", "", "tuner: compute the cost table from the tables of this NCCL `LOG` (NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,TUNING) instead of the built-in ones")
	fs.StringVar(&o.mem, "mem", "", "`HEX` bytes: r1/r2 of a generic program, or the raw initial context (@FILE reads them from FILE)")
	varFlag(fs, &o.vars)
	fs.StringVar(&o.rules, "rules", "", "fill the rules policy's table from this `FILE` (NCCL's example CSV tuner format)")
	fs.IntVar(&o.repeat, "repeat", 1, "run `N` times, sequence numbers counting up")
	fs.StringVar(&o.maps, "maps", "changed", "`WHICH` maps to show: changed, all or none")
	fs.BoolVar(&o.json, "json", false, "print one JSON object instead of text")
	fs.BoolVar(&o.fields, "fields", false, "list the context fields of the program's hook (or of --hook) and exit")
	fs.BoolVar(&o.unverified, "unverified", false, "raw experiments: run the program without the verifier, on the interpreter (the output says UNVERIFIED)")
}

func runRun(e *env, args []string, o runOptions) error {
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
		return writeJSON(e, rep)
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
	tuning   *ncclabi.Tuning // NCCL's tables for the cost model (nil: the built-in ones)
}

func (r *runTarget) close() {
	for _, c := range r.closers {
		c()
	}
}

// readObject reads a policy object: builtin:NAME or a file.
func readObject(path string) ([]byte, error) {
	if name, ok := strings.CutPrefix(path, "builtin:"); ok {
		obj, ok := policies.Object(name)
		if !ok {
			return nil, fmt.Errorf("%s: no such builtin policy (have: %s)", path, strings.Join(policies.Names(), ", "))
		}
		return obj, nil
	}
	// As the plugin and reload read it: a regular file of at most
	// config.MaxPolicyBytes, so that verify and run accept what they accept.
	return config.ReadRegularFile(path, config.MaxPolicyBytes)
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
	if o.unverified && engine.Name() != "interp" {
		return nil, usageErrorf("--unverified runs on the interpreter only, which traps bad memory accesses (not --engine %s)", engine.Name())
	}
	if h == nil && !o.unverified {
		return nil, usageErrorf("program %s (section %q) is attached to no hook, so it cannot be verified: "+
			"give --hook HOOK to verify it against one (ncclbpf run --hook tuner --fields lists a hook's context), "+
			"or --unverified to run it raw on the interpreter", r.prog.Name, r.prog.Section)
	}
	vars, data, err := runVars(o)
	if err != nil {
		return nil, err
	}
	if vars, data, err = rulesRunSettings(spec, path, o, vars, data, &r.notes); err != nil {
		return nil, err
	}
	if spec, err = bundle.Configure(spec, vars, data); err != nil {
		if errors.Is(err, bundle.ErrVariable) { // a --var that the object does not take
			return nil, usageErrorf("%s: %w", path, err)
		}
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if !o.unverified && asBundle(spec, r.prog, h) {
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
	} else if err := r.loadAlone(spec, engine, o.unverified); err != nil {
		r.close()
		return nil, err
	}
	if err := r.buildContext(o); err != nil {
		r.close()
		return nil, asUsage(err)
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
	for _, s := range splitVars(o.vars) {
		name, val, ok := strings.Cut(s, "=")
		name, val = strings.TrimSpace(name), strings.TrimSpace(val)
		if !ok || name == "" {
			return nil, nil, usageErrorf("--var %q: want NAME=VALUE", s)
		}
		v, err := config.ParseInt(val)
		if err != nil {
			return nil, nil, usageErrorf("--var %s: %w", name, err)
		}
		vars = append(vars, bundle.Var{Name: name, Value: v})
	}
	return vars, map[string][]byte{}, nil
}

// rulesRunSettings applies --rules as the plugin applies its rules file
// (config.Config.Rules): an object with a rule table needs a file with at
// least one rule; for one without, the file is ignored with a note. With
// --rules, the program reports which rule matched (its match log, shown as
// a printk line) unless --var sets that switch.
func rulesRunSettings(spec *loader.CollectionSpec, path string, o *runOptions, vars []bundle.Var, data map[string][]byte, notes *[]string) ([]bundle.Var, map[string][]byte, error) {
	cfg := config.Config{Policy: path, RulesFile: o.rules, RulesFrom: "--rules", RulesLog: o.rules != ""}
	hasVar := func(name string) bool { return spec.Variable(name) != nil }
	r, err := cfg.Rules(hasVar, "give one with --rules FILE (NCCL's example CSV tuner format), as the plugin needs one")
	if err != nil {
		return nil, nil, err
	}
	for _, n := range r.Notes {
		if !strings.HasPrefix(n, config.EnvRulesLog) && !strings.HasPrefix(n, "the rule that matches") {
			*notes = append(*notes, n)
		}
	}
	if r.Table == nil {
		return vars, data, nil
	}
	data[tuner.RulesVar] = r.Table
	if !r.Log {
		return vars, data, nil
	}
	for _, v := range vars {
		if v.Name == tuner.RulesLogVar {
			return vars, data, nil
		}
	}
	return append(vars, bundle.Var{Name: tuner.RulesLogVar, Value: 1}), data, nil
}

// asUsage makes err, about a flag's value, a usage error (exit status 2);
// an internal error (BUG) stays a failure.
func asUsage(err error) error {
	var ue *usageError
	if errors.As(err, &ue) || strings.HasPrefix(err.Error(), "BUG") {
		return err
	}
	return &usageError{err}
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
func (r *runTarget) loadAlone(spec *loader.CollectionSpec, engine vm.Engine, unverified bool) error {
	p := r.prog
	switch {
	case unverified && r.hook == nil:
		r.notes = append(r.notes, fmt.Sprintf("UNVERIFIED (--unverified): section %q names no hook; program %s runs without the verifier "+
			"on the interpreter (helpers that take pointers are not available; give --hook to verify it against a hook)", p.Section, p.Name))
	case unverified:
		r.notes = append(r.notes, fmt.Sprintf("UNVERIFIED (--unverified): program %s runs at hook %s without the verifier, "+
			"on the interpreter (helpers that take pointers are not available); the plugin would verify it first", p.Name, r.hook.Name))
	default:
		if err := verifyInBundle(spec, p, r.hook); err != nil {
			return explainLoad(fmt.Errorf("%s: program %s (section %q, hook %s) rejected: %w", r.object, p.Name, p.Section, r.hook.Name, err))
		}
		r.verified = true
	}
	live, _, err := bundle.CreateMaps(spec, nil, nil)
	if err != nil {
		return fmt.Errorf("%s: %w", r.object, err)
	}
	for _, m := range live {
		r.closers = append(r.closers, m.Close)
	}
	r.maps = live
	refs, table := bundle.MapRefs(live), maps.HelperTable()
	if unverified {
		for id, h := range table {
			if !scalarHelper(h.Proto) {
				delete(table, id)
			}
		}
	}
	exe, err := bundle.Compile(engine, p, nil, refs, table)
	if err != nil && unverified {
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
