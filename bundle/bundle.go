// Package bundle ties one policy object together: every program in the ELF
// file is attached to the hook its section names, verified against that
// hook, and compiled; the maps are created once per bundle and shared by all
// its programs, so that a profiler program can steer a tuner program through
// them (composition).
//
//	b, err := bundle.Load(obj, bundle.Options{Vars: []bundle.Var{{"size_lo", 4 << 20}}})
//	entry, ok := b.Entry(hook.Tuner) // a C-callable uint64_t fn(void *ctx)
//
// Load walks package loader, the verifier, package maps and the engine in
// that order (LoadSpec); each step is exported (Configure, Attach,
// CreateMaps, MapRefs, Compile) so that a tool can compose them for a
// program the plugin would not load as a bundle.
//
// Load is the only stage that turns untrusted bytes into running code, so
// every failure is an error that says which program or map and why; nothing
// is published by this package (package plugin does that).
package bundle

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/ncclbpf/ncclbpf/asm"
	"github.com/ncclbpf/ncclbpf/hook"
	"github.com/ncclbpf/ncclbpf/loader"
	"github.com/ncclbpf/ncclbpf/maps"
	"github.com/ncclbpf/ncclbpf/verifier"
	"github.com/ncclbpf/ncclbpf/vm"
)

// Var sets an integer global variable (typically a `volatile const`
// tunable in .rodata) before the maps are created. Value is encoded in the
// variable's size; negative values in two's complement.
type Var struct {
	Name  string
	Value uint64
}

// Options configure Load. The zero value loads the object as it is with
// the JIT.
type Options struct {
	// Name identifies the bundle in messages (a file name, "builtin:noop").
	Name string
	// Vars set integer globals by name.
	Vars []Var
	// Data sets whole globals by name to raw bytes (exactly the variable's
	// size): tables the host computes, such as the rules policy's.
	Data map[string][]byte
	// Engine compiles the programs; nil means the x86-64 JIT.
	Engine vm.Engine
	// RequireNative makes Load fail unless every program compiled to native
	// code (vm.NativeExecutable), as the plugin's C shim needs.
	RequireNative bool
	// Reuse offers the maps of a bundle this one replaces (a hot reload): a
	// map of the object with the same name and a compatible definition
	// (maps.Map.Compatible) is not created but taken from Reuse, contents
	// and all, so that updates made by the old programs while both run are
	// not lost. Global data sections (.data, .rodata, .bss) and read-only
	// maps are always fresh. See Reused and TakeOver.
	Reuse []*maps.Map
}

// Program is one verified, compiled program of a bundle.
type Program struct {
	Name    string
	Section string
	Hook    *hook.Hook
	// Verified is what the verifier found (warnings, stack depth).
	Verified *verifier.Result
	Exec     vm.Executable
}

// ReadsContext reports whether the program reads any byte of
// [off, off+size) of its context, from the accesses the verifier proved
// (verifier.Result.Context). The plugin skips filling inputs no program
// reads.
func (p *Program) ReadsContext(off, size int) bool { return p.Verified.ReadsContext(off, size) }

// WritesContext reports whether p may write any byte of [off, off+size)
// of its context (see verifier.Result.WritesContext).
func (p *Program) WritesContext(off, size int) bool { return p.Verified.WritesContext(off, size) }

// Entry returns the native entry of the program, or 0 if its engine does
// not produce native code.
func (p *Program) Entry() uintptr {
	if n, ok := p.Exec.(vm.NativeExecutable); ok {
		return n.Entry()
	}
	return 0
}

// Bundle is a loaded policy object.
type Bundle struct {
	Name string
	// Programs in the object's order (by section, then name).
	Programs []*Program
	// Maps in the object's order (by name); shared by all programs.
	Maps []*maps.Map
	// borrowed are the maps taken from Options.Reuse: Close leaves them
	// open until TakeOver makes them this bundle's own.
	borrowed map[*maps.Map]bool
	// decidesOn are the maps a program that decides (a tuner) reads as
	// rank-uniform: it refers to them and no program writes them.
	decidesOn map[*maps.Map]bool
}

// DecidesOn reports whether a tuner program of b reads m as rank-uniform
// data (it refers to m, and no program writes m). A write to such a map at
// an arbitrary moment (a control-plane update) reaches ranks at different
// calls, so they would decide differently for a while: such writes belong
// at an agreed call sequence.
func (b *Bundle) DecidesOn(m *maps.Map) bool { return b.decidesOn[m] }

// ErrVariable is wrapped by errors about Options.Vars and Options.Data.
var ErrVariable = errors.New("bad variable setting")

// Load parses the policy object obj and loads it with LoadSpec.
func Load(obj []byte, opts Options) (*Bundle, error) {
	name := opts.Name
	if name == "" {
		name = "policy"
	}
	spec, err := loader.LoadBytes(obj)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return LoadSpec(spec, opts)
}

// LoadSpec verifies and compiles a parsed policy object. Each step is one
// package, and the walk never returns to a package it left:
//
//  1. Configure (package loader): opts.Vars and opts.Data are set on a
//     copy of spec, so spec itself is not changed;
//  2. Attach: each program gets the hook its section names;
//  3. verifier.VerifyCollection: all programs are verified together
//     against the map specs, .rodata with the values just set;
//  4. CreateMaps (package maps): the maps are created, or taken from
//     opts.Reuse, then seen as the engines see them (MapRefs) with the
//     native helper table;
//  5. Compile (opts.Engine): each program is compiled against them.
//
// A program rejected by the verifier therefore creates no map.
func LoadSpec(spec *loader.CollectionSpec, opts Options) (*Bundle, error) {
	name := opts.Name
	if name == "" {
		name = "policy"
	}
	b, err := build(spec, name, opts)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return b, nil
}

func build(spec *loader.CollectionSpec, name string, opts Options) (_ *Bundle, err error) {
	if len(spec.Programs) == 0 {
		return nil, errors.New("the object has no programs (put them in SEC(\"tuner\"), SEC(\"profiler/...\"), ...)")
	}
	spec, err = Configure(spec, opts.Vars, opts.Data)
	if err != nil {
		return nil, err
	}
	hooks, err := Attach(spec)
	if err != nil {
		return nil, err
	}
	// verified together: rank uniformity depends on which maps the
	// bundle's programs write
	results, errs, local := verifier.VerifyCollection(spec, hooks)
	for i, p := range spec.Programs {
		if errs[i] != nil {
			return nil, fmt.Errorf("program %s (section %q): rejected: %w", p.Name, p.Section, errs[i])
		}
	}
	b := &Bundle{Name: name}
	defer func() {
		if err != nil {
			b.Close()
		}
	}()
	b.Maps, b.borrowed, err = CreateMaps(spec, opts.Reuse, local)
	if err != nil {
		return nil, err
	}
	refs, helperTable := MapRefs(b.Maps), maps.HelperTable()
	for i, p := range spec.Programs {
		if !hooks[i].Decides {
			continue
		}
		for pc, ins := range p.Insns {
			if ins.IsLdImm64() && (ins.Src == asm.PseudoMapFD || ins.Src == asm.PseudoMapValue) &&
				ins.Imm >= 0 && int(ins.Imm) < len(local) && !local[ins.Imm] && pc+1 < len(p.Insns) {
				if b.decidesOn == nil {
					b.decidesOn = map[*maps.Map]bool{}
				}
				b.decidesOn[b.Maps[ins.Imm]] = true
			}
		}
	}
	engine := opts.Engine
	if engine == nil {
		engine = defaultEngine()
	}
	for i, lp := range spec.Programs {
		h := hooks[i]
		exe, err := Compile(engine, lp, results[i], refs, helperTable)
		if err != nil {
			return nil, fmt.Errorf("program %s (section %q): compile with %s: %w", lp.Name, lp.Section, engine.Name(), err)
		}
		p := &Program{Name: lp.Name, Section: lp.Section, Hook: h, Verified: results[i], Exec: exe}
		b.Programs = append(b.Programs, p)
		if opts.RequireNative && p.Entry() == 0 {
			return nil, fmt.Errorf("program %s: engine %s does not produce native code", lp.Name, engine.Name())
		}
	}
	return b, nil
}

// Configure returns a copy of spec with vars and data set (loader's
// VariableSpec.Set): vars in their order, then data by variable name.
// Errors wrap ErrVariable and name the variable.
func Configure(spec *loader.CollectionSpec, vars []Var, data map[string][]byte) (*loader.CollectionSpec, error) {
	spec = spec.Copy()
	find := func(name string) (*loader.VariableSpec, error) {
		v := spec.Variable(name)
		if v == nil {
			var names []string
			for _, v := range spec.Variables {
				names = append(names, v.Name)
			}
			sort.Strings(names)
			return nil, fmt.Errorf("%w: %s: no such global variable (the object has: %s)", ErrVariable, name,
				strings.Join(names, ", "))
		}
		return v, nil
	}
	for _, s := range vars {
		v, err := find(s.Name)
		if err != nil {
			return nil, err
		}
		if err := v.Set(s.Value); err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrVariable, s.Name, err)
		}
	}
	names := make([]string, 0, len(data))
	for n := range data {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		v, err := find(n)
		if err != nil {
			return nil, err
		}
		if err := v.Set(data[n]); err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrVariable, n, err)
		}
	}
	return spec, nil
}

// Attach returns the hook each program of spec attaches to (the one its
// section names), in the order of spec.Programs. A bundle has at most one
// program per hook.
func Attach(spec *loader.CollectionSpec) ([]*hook.Hook, error) {
	hooks := make([]*hook.Hook, len(spec.Programs))
	byHook := map[string]string{}
	for i, p := range spec.Programs {
		h, err := hook.ForSection(p.Section)
		if err != nil {
			return nil, fmt.Errorf("program %s: %w", p.Name, err)
		}
		if prev, ok := byHook[h.Name]; ok {
			return nil, fmt.Errorf("programs %s and %s both attach to hook %q: a bundle has at most one program per hook",
				prev, p.Name, h.Name)
		}
		byHook[h.Name] = p.Name
		hooks[i] = h
	}
	return hooks, nil
}

// CreateMaps creates the maps of spec, in its order (the order LD_IMM64
// map references index). A map with the same name and a compatible
// definition in reuse (maps.Map.Compatible) is taken instead of created,
// contents and all, and listed in borrowed; global data sections and maps
// programs may not write are always created. written[i] says whether a
// program of spec writes map i (the verifier's finding,
// verifier.VerifyCollection); each such map is marked
// (maps.Map.MarkProgramWritten). A map no program of spec writes is
// rank-uniform for its tuner, so one that programs wrote before (an old
// bundle's measurements) is not reused but created afresh: its contents
// may differ from rank to rank, and ranks deciding on them would hang the
// collective. A nil written means no program writes any map. On error,
// the maps created so far are closed.
func CreateMaps(spec *loader.CollectionSpec, reuse []*maps.Map, written []bool) (live []*maps.Map, borrowed map[*maps.Map]bool, err error) {
	defer func() {
		if err != nil {
			for _, m := range live {
				if !borrowed[m] {
					m.Close()
				}
			}
			live, borrowed = nil, nil
		}
	}()
	for i, ms := range spec.Maps {
		writes := i < len(written) && written[i]
		m := reusable(reuse, *ms, ms.IsGlobalData() || ms.Freeze, writes)
		if m != nil {
			if borrowed == nil {
				borrowed = map[*maps.Map]bool{}
			}
			borrowed[m] = true
		} else if m, err = maps.New(*ms); err != nil {
			return live, borrowed, err
		}
		if writes {
			m.MarkProgramWritten()
		}
		live = append(live, m)
	}
	return live, borrowed, nil
}

// MapRefs returns the live maps as the engines see them, in their order.
func MapRefs(live []*maps.Map) []vm.MapRef {
	refs := make([]vm.MapRef, len(live))
	for i, m := range live {
		refs[i] = m.Ref()
	}
	return refs
}

// Compile compiles program p with engine, its map references bound to
// refs (MapRefs of the maps CreateMaps returned, in the order of the
// CollectionSpec's Maps) and its helper calls to helpers.
func Compile(engine vm.Engine, p *loader.ProgramSpec, verified *verifier.Result, refs []vm.MapRef, helpers vm.HelperTable) (vm.Executable, error) {
	prog := &vm.Program{Name: p.Name, Insns: p.Insns, Maps: refs, Helpers: helpers}
	if verified != nil {
		prog.Structure = verified.Structure // validated once, by the verifier
	}
	return engine.Compile(prog)
}

// Program returns the program attached to hook name, or nil.
func (b *Bundle) Program(hookName string) *Program {
	for _, p := range b.Programs {
		if p.Hook.Name == hookName {
			return p
		}
	}
	return nil
}

// Entry returns the native entry of the program attached to hook name.
func (b *Bundle) Entry(hookName string) (uintptr, bool) {
	p := b.Program(hookName)
	if p == nil || p.Entry() == 0 {
		return 0, false
	}
	return p.Entry(), true
}

// Map returns the map called name, or nil.
func (b *Bundle) Map(name string) *maps.Map {
	for _, m := range b.Maps {
		if m.Name() == name {
			return m
		}
	}
	return nil
}

// Close releases the programs and maps. No program of the bundle may be
// running or called afterwards (unpublish it and wait for a grace period
// first).
func (b *Bundle) Close() error {
	var errs []error
	for _, p := range b.Programs {
		if p.Exec != nil {
			errs = append(errs, p.Exec.Close())
		}
	}
	for _, m := range b.Maps {
		if !b.borrowed[m] {
			errs = append(errs, m.Close())
		}
	}
	b.Programs, b.Maps = nil, nil
	return errors.Join(errs...)
}
