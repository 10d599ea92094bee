// Package bundle ties one policy object together: every program in the ELF
// file is attached to the hook its section names, verified against that
// hook, and compiled; the maps are created once per bundle and shared by all
// its programs, so that a profiler program can steer a tuner program through
// them (composition).
//
//	b, err := bundle.Load(obj, bundle.Options{Vars: []bundle.Var{{"size_lo", 4 << 20}}})
//	entry, ok := b.Entry(hook.Tuner) // a C-callable uint64_t fn(void *ctx)
//
// Load is the only stage that turns untrusted bytes into running code, so
// every failure is an error that says which program or map and why; nothing
// is published by this package (package plugin does that).
package bundle

import (
	"encoding/binary"
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
	ctx      *ctxUse
}

// ReadsContext reports whether the program may read any byte of
// [off, off+size) of its context: false only when a data-flow pass proved
// that no load reaches those bytes. The plugin skips filling such inputs.
func (p *Program) ReadsContext(off, size int) bool { return p.ctx.Reads(off, size) }

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

// Load parses, verifies and compiles the policy object obj.
func Load(obj []byte, opts Options) (*Bundle, error) {
	name := opts.Name
	if name == "" {
		name = "policy"
	}
	coll, err := loader.LoadBytes(obj)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	b, err := build(coll, name, opts)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return b, nil
}

func build(coll *loader.Collection, name string, opts Options) (_ *Bundle, err error) {
	if len(coll.Programs) == 0 {
		return nil, errors.New("the object has no programs (put them in SEC(\"tuner\"), SEC(\"profiler/...\"), ...)")
	}
	contents, err := globalContents(coll, opts)
	if err != nil {
		return nil, err
	}
	b := &Bundle{Name: name}
	defer func() {
		if err != nil {
			b.Close()
		}
	}()
	infos := make([]verifier.MapInfo, len(coll.Maps))
	refs := make([]vm.MapRef, len(coll.Maps))
	for i, ms := range coll.Maps {
		spec := maps.Spec{
			Name: ms.Name, Type: maps.Type(ms.Type), KeySize: ms.KeySize, ValueSize: ms.ValueSize,
			MaxEntries: ms.MaxEntries, Flags: ms.Flags, Freeze: ms.ReadOnly, Key: ms.Key, Value: ms.Value,
		}
		if c, ok := contents[i]; ok {
			spec.Contents = []maps.KV{{Key: []byte{0, 0, 0, 0}, Value: c}}
		}
		m := reusable(opts.Reuse, spec, ms.IsGlobalData() || ms.ReadOnly)
		if m != nil {
			if b.borrowed == nil {
				b.borrowed = map[*maps.Map]bool{}
			}
			b.borrowed[m] = true
		} else if m, err = maps.New(spec); err != nil {
			return nil, err
		}
		b.Maps = append(b.Maps, m)
		refs[i] = m.Ref()
		infos[i] = verifier.MapInfo{Name: ms.Name, Type: ms.Type, KeySize: ms.KeySize, ValueSize: ms.ValueSize,
			MaxEntries: ms.MaxEntries, ReadOnly: ms.ReadOnly, Flags: ms.Flags}
		if ms.ReadOnly {
			infos[i].Contents = contents[i]
		}
	}
	engine := opts.Engine
	if engine == nil {
		engine = defaultEngine()
	}
	helperTable := maps.HelperTable()
	byHook := map[string]string{}
	units := make([]verifier.Unit, len(coll.Programs))
	for i, lp := range coll.Programs {
		h, err := hook.ForSection(lp.Section)
		if err != nil {
			return nil, fmt.Errorf("program %s: %w", lp.Name, err)
		}
		if prev, ok := byHook[h.Name]; ok {
			return nil, fmt.Errorf("programs %s and %s both attach to hook %q: a bundle has at most one program per hook",
				prev, lp.Name, h.Name)
		}
		byHook[h.Name] = lp.Name
		units[i] = verifier.Unit{Insns: lp.Insns, Config: verifier.Config{Hook: h, Source: sourceOf(lp)}}
	}
	// verified together: rank uniformity depends on which maps the
	// bundle's programs write
	results, errs, used := verifier.VerifyTogether(infos, units)
	for i, lp := range coll.Programs {
		if !units[i].Config.Hook.Decides {
			continue
		}
		for pc, ins := range lp.Insns {
			if ins.IsLdImm64() && (ins.Src == asm.PseudoMapFD || ins.Src == asm.PseudoMapValue) &&
				ins.Imm >= 0 && int(ins.Imm) < len(used) && !used[ins.Imm].Local && pc+1 < len(lp.Insns) {
				if b.decidesOn == nil {
					b.decidesOn = map[*maps.Map]bool{}
				}
				b.decidesOn[b.Maps[ins.Imm]] = true
			}
		}
	}
	for i, lp := range coll.Programs {
		h, res, err := units[i].Config.Hook, results[i], errs[i]
		if err != nil {
			return nil, fmt.Errorf("program %s (section %q): rejected: %w", lp.Name, lp.Section, err)
		}
		exe, err := engine.Compile(&vm.Program{Name: lp.Name, Insns: lp.Insns, Maps: refs, Helpers: helperTable})
		if err != nil {
			return nil, fmt.Errorf("program %s (section %q): compile with %s: %w", lp.Name, lp.Section, engine.Name(), err)
		}
		p := &Program{Name: lp.Name, Section: lp.Section, Hook: h, Verified: res, Exec: exe,
			ctx: analyzeCtx(lp.Insns, h.Context.Size)}
		b.Programs = append(b.Programs, p)
		if opts.RequireNative && p.Entry() == 0 {
			return nil, fmt.Errorf("program %s: engine %s does not produce native code", lp.Name, engine.Name())
		}
	}
	return b, nil
}

func sourceOf(p *loader.Program) func(pc int) (string, int, int, string) {
	return func(pc int) (string, int, int, string) {
		l := p.SourceAt(pc)
		if l == nil {
			return "", 0, 0, ""
		}
		return l.File, l.Line, l.Col, l.Source
	}
}

// globalContents applies opts.Vars and opts.Data to copies of the global
// data sections, by map index.
func globalContents(coll *loader.Collection, opts Options) (map[int][]byte, error) {
	out := map[int][]byte{}
	for i, ms := range coll.Maps {
		if ms.IsGlobalData() {
			out[i] = append([]byte(nil), ms.Contents...)
		}
	}
	find := func(name string) (*loader.Variable, []byte, error) {
		v := coll.Variable(name)
		if v == nil {
			var names []string
			for _, v := range coll.Variables {
				names = append(names, v.Name)
			}
			sort.Strings(names)
			return nil, nil, fmt.Errorf("%w: %s: no such global variable (the object has: %s)", ErrVariable, name,
				strings.Join(names, ", "))
		}
		buf, ok := out[v.Map]
		if !ok || int(v.Offset+v.Size) > len(buf) {
			return nil, nil, fmt.Errorf("%w: %s: not in a global data section", ErrVariable, name)
		}
		return v, buf, nil
	}
	for _, s := range opts.Vars {
		v, buf, err := find(s.Name)
		if err != nil {
			return nil, err
		}
		enc, err := EncodeInt(s.Value, int(v.Size))
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrVariable, s.Name, err)
		}
		copy(buf[v.Offset:], enc)
	}
	names := make([]string, 0, len(opts.Data))
	for n := range opts.Data {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		v, buf, err := find(n)
		if err != nil {
			return nil, err
		}
		if d := opts.Data[n]; len(d) != int(v.Size) {
			return nil, fmt.Errorf("%w: %s: %d bytes given, the variable has %d", ErrVariable, n, len(d), v.Size)
		}
		copy(buf[v.Offset:], opts.Data[n])
	}
	return out, nil
}

// EncodeInt returns v as size little-endian bytes (size 1, 2, 4 or 8),
// checking that it fits as a signed or an unsigned integer of that size.
func EncodeInt(v uint64, size int) ([]byte, error) {
	if size != 1 && size != 2 && size != 4 && size != 8 {
		return nil, fmt.Errorf("a %d-byte variable is not an integer", size)
	}
	if size < 8 {
		bits := uint(size * 8)
		s := int64(v)
		if v >= 1<<bits && (s < -(1<<(bits-1)) || s >= 0) {
			return nil, fmt.Errorf("value %d does not fit in %d bytes", s, size)
		}
	}
	b := make([]byte, 8)
	binary.LittleEndian.PutUint64(b, v)
	return b[:size], nil
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
