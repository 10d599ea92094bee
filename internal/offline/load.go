package offline

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/ncclbpf/ncclbpf/bundle"
	"github.com/ncclbpf/ncclbpf/helpers"
	"github.com/ncclbpf/ncclbpf/hook"
	"github.com/ncclbpf/ncclbpf/internal/cli"
	"github.com/ncclbpf/ncclbpf/internal/config"
	"github.com/ncclbpf/ncclbpf/internal/ncclabi"
	"github.com/ncclbpf/ncclbpf/internal/tuner"
	"github.com/ncclbpf/ncclbpf/loader"
	"github.com/ncclbpf/ncclbpf/maps"
	"github.com/ncclbpf/ncclbpf/policies"
	"github.com/ncclbpf/ncclbpf/verifier"
	"github.com/ncclbpf/ncclbpf/vm"
)

// Options describe an offline run: which program, the context it gets,
// how often it runs and what the report shows. The strings are read as
// ncclbpf run's flags of the same names spell them.
type Options struct {
	Section    string   // the program of this section (or with this name)
	Hook       string   // the program attached to this hook, or the hook to verify the program against
	Mem        string   // hex bytes (or @FILE): r1/r2 of a generic program, or the raw initial context
	Rules      string   // the rules policy's table file (NCCL's example CSV tuner format)
	Maps       string   // which maps to show: changed, all or none
	Coll       string   // the collective's name
	Bytes      string   // the collective's size
	Ranks      string   // ranks in the communicator
	Nodes      string   // nodes spanned by the communicator
	Costs      string   // edits of the tuner's cost table
	TuningLog  string   // an NCCL log whose tables feed the tuner's cost model (empty: the built-in ones)
	Sets       []string // FIELD=VALUE settings of context fields
	Vars       []string // NAME=VALUE settings of volatile const globals (each may be a comma-separated list)
	Repeat     int      // runs, sequence numbers counting up
	JSON       bool     // print one JSON object instead of text
	Fields     bool     // list the context fields of the program's hook and stop
	Unverified bool     // run without the verifier, on the interpreter
}

// Run loads the object at path (a file or builtin:NAME) as the plugin
// does, runs the program o selects on engine, on the context o describes,
// and prints what it did to w. An error about how the run was asked for is
// a cli.UsageError.
func Run(w io.Writer, path string, o *Options, engine vm.Engine) error {
	if o.Repeat < 1 {
		return cli.Usagef("--repeat %d: want at least 1", o.Repeat)
	}
	if o.Maps != "changed" && o.Maps != "all" && o.Maps != "none" {
		return cli.Usagef("--maps %q: want changed, all or none", o.Maps)
	}
	r, err := prepareRun(path, o, engine)
	if err != nil {
		return err
	}
	defer r.close()
	if o.Fields {
		if r.hook == nil {
			return fmt.Errorf("program %s (section %q) has no hook, hence no context fields; name one with --hook", r.prog.Name, r.prog.Section)
		}
		writeFields(w, r.hook)
		return nil
	}
	rep, err := r.execute(o)
	if err != nil {
		return err
	}
	if o.JSON {
		return cli.WriteJSON(w, rep)
	}
	writeRunReport(w, rep)
	return nil
}

// WriteFields prints the context layout of the hook called name, with the
// typical values a run starts from.
func WriteFields(w io.Writer, name string) error {
	h, err := lookupHook(name)
	if err != nil {
		return err
	}
	writeFields(w, h)
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
	return nil, cli.Usagef("unknown hook %q; hooks: %s", name, strings.Join(names, ", "))
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

// ReadObject reads a policy object: builtin:NAME or a file.
func ReadObject(path string) ([]byte, error) {
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

func prepareRun(path string, o *Options, engine vm.Engine) (*runTarget, error) {
	var forced *hook.Hook
	if o.Hook != "" {
		h, err := lookupHook(o.Hook)
		if err != nil {
			return nil, err
		}
		forced = h
	}
	obj, err := ReadObject(path)
	if err != nil {
		return nil, err
	}
	spec, err := loader.LoadBytes(obj)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	r := &runTarget{object: path, engine: engine.Name()}
	var h *hook.Hook
	r.prog, h, err = selectProgram(spec, path, o.Section, forced, &r.notes)
	if err != nil {
		return nil, err
	}
	r.hook = h
	if o.Unverified && engine.Name() != "interp" {
		return nil, cli.Usagef("--unverified runs on the interpreter only, which traps bad memory accesses (not --engine %s)", engine.Name())
	}
	if h == nil && !o.Unverified {
		return nil, cli.Usagef("program %s (section %q) is attached to no hook, so it cannot be verified: "+
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
			return nil, cli.Usagef("%s: %w", path, err)
		}
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if !o.Unverified && asBundle(spec, r.prog, h) {
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
	} else if err := r.loadAlone(spec, engine, o.Unverified); err != nil {
		r.close()
		return nil, err
	}
	if err := r.buildContext(o); err != nil {
		r.close()
		return nil, cli.AsUsage(err)
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
			return nil, nil, cli.Usagef("%s: %d programs in section %q (%s): choose one by name with --section NAME",
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
			return nil, nil, cli.Usagef("%s: %d programs attach to hook %s; the object has: %s; choose one with --section",
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
			return nil, nil, cli.Usagef("%s has %d programs: %s; choose one with --section", path, len(coll.Programs), strings.Join(all, ", "))
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
func runVars(o *Options) ([]bundle.Var, map[string][]byte, error) {
	var vars []bundle.Var
	for _, s := range cli.SplitVars(o.Vars) {
		name, val, ok := strings.Cut(s, "=")
		name, val = strings.TrimSpace(name), strings.TrimSpace(val)
		if !ok || name == "" {
			return nil, nil, cli.Usagef("--var %q: want NAME=VALUE", s)
		}
		v, err := config.ParseInt(val)
		if err != nil {
			return nil, nil, cli.Usagef("--var %s: %w", name, err)
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
func rulesRunSettings(spec *loader.CollectionSpec, path string, o *Options, vars []bundle.Var, data map[string][]byte, notes *[]string) ([]bundle.Var, map[string][]byte, error) {
	cfg := config.Config{Policy: path, RulesFile: o.Rules, RulesFrom: "--rules", RulesLog: o.Rules != ""}
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
