package asm

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// An AsmError reports a line that could not be assembled.
type AsmError struct {
	Line   int    // 1-based line number in the source
	Source string // the line, without its comment
	Err    error  // what was wrong
}

// Error returns "line N: what (in "source")".
func (e *AsmError) Error() string {
	return fmt.Sprintf("line %d: %v (in %q)", e.Line, e.Err, e.Source)
}

// Unwrap returns the underlying error.
func (e *AsmError) Unwrap() error { return e.Err }

// maxAsmErrors bounds how many line errors Assemble reports at once.
const maxAsmErrors = 10

// Assemble translates assembler text into instruction slots. Jump and local
// call targets may be labels or signed slot offsets ("+3", "-1"). The error,
// if any, joins up to ten *AsmError values, one per bad line.
//
// The dialect is the one of uBPF and the bpf_conformance suite:
//
//	# a comment (also after an instruction)
//	mov32 %r0, 1            ALU32: add sub mul div sdiv mod smod or and xor
//	add %r0, %r1            lsh rsh arsh mov neg, "32" suffix; ALU64 without
//	neg %r2                 suffix (or with "64")
//	movsx832 %r1, %r2       movsx{8,16}32, movsx{8,16,32}64: sign-extending mov
//	le16 %r1 / be64 %r1     byte order conversion; bswap16/32/64 (alias swap)
//	ldxw %r0, [%r1+8]       ldx{b,h,w,dw}, sign-extending ldxs{b,h,w}
//	                        (alias ldx{b,h,w}sx)
//	stxdw [%r10-8], %r1     stx{b,h,w,dw}; st{b,h,w,dw} [%r10-8], 0x1234
//	lddw %r1, 0x1122334455667788   the 16-byte LD_IMM64
//	lock add [%r10-8], %r1  atomics: add or and xor (+ "fetch"), xchg, cmpxchg;
//	lock fetch or32 ...     "32" suffix for 32-bit width
//	ja label / ja +3        jumps: ja, ja32 (alias gotol, 32-bit offset),
//	jne %r0, 15, fail       jeq jne jgt jge jlt jle jset jsgt jsge jslt jsle,
//	jslt32 %r1, %r2, -4     "32" suffix for the JMP32 class
//	call 5                  helper call by id; "call %r2" (callx, id in a
//	call local func1        register); "call local LABEL|+N" subprogram call;
//	exit                    "call runtime N" (src=2)
//	fail:                   a label; "exit" is also an implicit label of the
//	                        first exit instruction unless defined explicitly
//
// Numbers are decimal or 0x hex, optionally negative; a decimal immediate or
// offset must fit its signed field, a hex one may use the unsigned range
// (0xffffffff is -1). A leading 0 is not octal. Registers are written
// %r0-%r10 (r0-r10 is accepted as well). Extensions of this package, which
// the disassembler uses when nothing else represents an instruction exactly:
//
//	lddw %r1, map(3)              LD_IMM64 with src=1 (map handle of map 3)
//	lddw %r1, map_value(3)+16     LD_IMM64 with src=2 (address in map 3's value)
//	ldabsw 12 / ldindh %r1, 4     legacy packet loads (ldabs*, ldind*)
//	.insn 0x0000000100000095      one raw 64-bit instruction word
func Assemble(src string) ([]Instruction, error) {
	a := assembler{labels: map[string]int{}, firstExit: -1}
	for i, line := range strings.Split(src, "\n") {
		a.line(i+1, line)
		if len(a.errs) >= maxAsmErrors {
			break
		}
	}
	a.resolve()
	if len(a.errs) > 0 {
		return nil, errors.Join(a.errs...)
	}
	return a.out, nil
}

type fixup struct {
	pc     int    // slot to patch
	label  string // target
	inImm  bool   // the offset goes into Imm (ja32, call local), else Off
	line   int
	source string
}

type assembler struct {
	out       []Instruction
	labels    map[string]int
	fixups    []fixup
	firstExit int
	errs      []error
}

func (a *assembler) fail(line int, source string, err error) {
	a.errs = append(a.errs, &AsmError{Line: line, Source: source, Err: err})
}

func (a *assembler) line(n int, text string) {
	if i := strings.IndexByte(text, '#'); i >= 0 {
		text = text[:i]
	}
	text = strings.TrimSpace(text)
	// Leading labels: "name:" (possibly followed by an instruction).
	for {
		i := strings.IndexByte(text, ':')
		if i < 0 || !isLabel(strings.TrimSpace(text[:i])) {
			break
		}
		name := strings.TrimSpace(text[:i])
		if _, dup := a.labels[name]; dup {
			a.fail(n, text, fmt.Errorf("label %q defined twice", name))
		} else {
			a.labels[name] = len(a.out)
		}
		text = strings.TrimSpace(text[i+1:])
	}
	if text == "" {
		return
	}
	insns, ref, err := parseInstruction(text)
	if err != nil {
		a.fail(n, text, err)
		return
	}
	if ref != nil {
		a.fixups = append(a.fixups, fixup{pc: len(a.out), label: ref.label, inImm: ref.inImm, line: n, source: text})
	}
	if insns[0].Op == OpExit && a.firstExit < 0 {
		a.firstExit = len(a.out)
	}
	a.out = append(a.out, insns...)
}

func (a *assembler) resolve() {
	if _, ok := a.labels["exit"]; !ok && a.firstExit >= 0 {
		a.labels["exit"] = a.firstExit
	}
	for _, f := range a.fixups {
		target, ok := a.labels[f.label]
		if !ok {
			a.fail(f.line, f.source, fmt.Errorf("undefined label %q", f.label))
			continue
		}
		delta := target - (f.pc + 1)
		if f.inImm {
			a.out[f.pc].Imm = int32(delta)
			continue
		}
		if delta < -1<<15 || delta >= 1<<15 {
			a.fail(f.line, f.source, fmt.Errorf("label %q is %d slots away, beyond a 16-bit jump offset (use ja32)", f.label, delta))
			continue
		}
		a.out[f.pc].Off = int16(delta)
	}
}

// labelRef is an unresolved jump or call target.
type labelRef struct {
	label string
	inImm bool
}

func isLabel(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		switch {
		case c == '_' || c == '.' || c == '$' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
		case c >= '0' && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

// Mnemonic tables, shared by the assembler and the disassembler.
var (
	aluNames = map[ALUOp]string{
		ALUAdd: "add", ALUSub: "sub", ALUMul: "mul", ALUDiv: "div", ALUOr: "or", ALUAnd: "and",
		ALULsh: "lsh", ALURsh: "rsh", ALUNeg: "neg", ALUMod: "mod", ALUXor: "xor", ALUMov: "mov",
		ALUArsh: "arsh",
	}
	jumpNames = map[JumpOp]string{
		JumpEq: "jeq", JumpGT: "jgt", JumpGE: "jge", JumpSet: "jset", JumpNE: "jne", JumpSGT: "jsgt",
		JumpSGE: "jsge", JumpLT: "jlt", JumpLE: "jle", JumpSLT: "jslt", JumpSLE: "jsle",
	}
	sizeNames   = map[Size]string{SizeB: "b", SizeH: "h", SizeW: "w", SizeDW: "dw"}
	atomicNames = map[int32]string{
		AtomicAdd: "add", AtomicOr: "or", AtomicAnd: "and", AtomicXor: "xor",
		AtomicXchg: "xchg", AtomicCmpXchg: "cmpxchg",
	}

	aluByName    = invert(aluNames)
	jumpByName   = invert(jumpNames)
	sizeByName   = invert(sizeNames)
	atomicByName = invert(atomicNames)
)

func invert[K comparable](m map[K]string) map[string]K {
	r := make(map[string]K, len(m))
	for k, v := range m {
		r[v] = k
	}
	return r
}

// parseInstruction parses one instruction (no label, no comment). Numeric
// jump targets are encoded directly; a symbolic one is returned as ref.
func parseInstruction(text string) ([]Instruction, *labelRef, error) {
	mnemonic, rest, _ := strings.Cut(strings.ReplaceAll(text, "\t", " "), " ")
	rest = strings.TrimSpace(rest)
	var ops []string
	if rest != "" {
		for _, op := range strings.Split(rest, ",") {
			ops = append(ops, strings.TrimSpace(op))
		}
	}
	one := func(ins Instruction, err error) ([]Instruction, *labelRef, error) {
		if err != nil {
			return nil, nil, err
		}
		return []Instruction{ins}, nil, nil
	}

	switch {
	case mnemonic == "exit":
		if err := wantOperands(mnemonic, ops, 0); err != nil {
			return nil, nil, err
		}
		return []Instruction{{Op: OpExit}}, nil, nil
	case mnemonic == "call":
		return parseCall(rest)
	case mnemonic == "lock":
		return one(parseAtomic(rest, ops))
	case mnemonic == "lddw":
		return parseLddw(ops)
	case mnemonic == ".insn":
		if err := wantOperands(mnemonic, ops, 1); err != nil {
			return nil, nil, err
		}
		n, err := parseNumber(ops[0])
		if err != nil || n.neg {
			return nil, nil, fmt.Errorf("bad instruction word %q: want a non-negative 64-bit number", ops[0])
		}
		return []Instruction{DecodeOne(n.mag)}, nil, nil
	case mnemonic == "ja" || mnemonic == "ja32" || mnemonic == "gotol":
		if err := wantOperands(mnemonic, ops, 1); err != nil {
			return nil, nil, err
		}
		ins := Instruction{Op: OpJa}
		wide := mnemonic != "ja"
		if wide {
			ins.Op = OpJa32
		}
		return jumpTarget(ins, ops[0], wide)
	}
	if base, ok := strings.CutSuffix(mnemonic, "32"); ok {
		if op, ok := jumpByName[base]; ok {
			return parseJump(mnemonic, ClassJMP32, op, ops)
		}
	}
	if op, ok := jumpByName[mnemonic]; ok {
		return parseJump(mnemonic, ClassJMP, op, ops)
	}
	if ins, ok, err := parseEndian(mnemonic, ops); ok {
		return one(ins, err)
	}
	if ins, ok, err := parseLoadStore(mnemonic, ops); ok {
		return one(ins, err)
	}
	if ins, ok, err := parseALU(mnemonic, ops); ok {
		return one(ins, err)
	}
	return nil, nil, fmt.Errorf("unknown mnemonic %q", mnemonic)
}

func wantOperands(mnemonic string, ops []string, n int) error {
	if len(ops) != n {
		return fmt.Errorf("%s takes %d operand(s), got %d", mnemonic, n, len(ops))
	}
	for i, op := range ops {
		if op == "" {
			return fmt.Errorf("%s: operand %d is empty", mnemonic, i+1)
		}
	}
	return nil
}

// jumpTarget fills ins's offset (Off, or Imm when wide) from a numeric
// target or returns a label reference.
func jumpTarget(ins Instruction, target string, wide bool) ([]Instruction, *labelRef, error) {
	if isLabel(target) && !isNumber(target) {
		return []Instruction{ins}, &labelRef{label: target, inImm: wide}, nil
	}
	var err error
	if wide {
		ins.Imm, err = parseImm32(target)
	} else {
		ins.Off, err = parseOff16(target)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("jump target: %w", err)
	}
	return []Instruction{ins}, nil, nil
}

func parseJump(mnemonic string, class Class, op JumpOp, ops []string) ([]Instruction, *labelRef, error) {
	if err := wantOperands(mnemonic, ops, 3); err != nil {
		return nil, nil, err
	}
	dst, err := parseRegister(ops[0])
	if err != nil {
		return nil, nil, err
	}
	ins := Instruction{Dst: dst}
	if _, isReg := registerOperand(ops[1]); isReg {
		if ins.Src, err = parseRegister(ops[1]); err != nil {
			return nil, nil, err
		}
		ins.Op = JumpOpCode(class, op, SourceX)
	} else {
		if ins.Imm, err = parseImm32(ops[1]); err != nil {
			return nil, nil, err
		}
		ins.Op = JumpOpCode(class, op, SourceK)
	}
	return jumpTarget(ins, ops[2], false)
}

func parseCall(rest string) ([]Instruction, *labelRef, error) {
	fields := strings.Fields(rest)
	mode := "helper"
	if len(fields) == 2 {
		mode, fields = fields[0], fields[1:]
	}
	if len(fields) != 1 || fields[0] == "local" || fields[0] == "runtime" || fields[0] == "helper" {
		return nil, nil, fmt.Errorf("call takes a helper id, %%rN, \"local TARGET\" or \"runtime ID\", got %q", rest)
	}
	target := fields[0]
	switch mode {
	case "helper":
		if _, ok := registerOperand(target); ok {
			r, err := parseRegister(target)
			if err != nil {
				return nil, nil, err
			}
			return []Instruction{{Op: OpCallX, Dst: r}}, nil, nil
		}
		if isLabel(target) && !isNumber(target) {
			return []Instruction{{Op: OpCall, Src: PseudoCall}}, &labelRef{label: target, inImm: true}, nil
		}
		id, err := parseImm32(target)
		if err != nil {
			return nil, nil, fmt.Errorf("helper id: %w", err)
		}
		return []Instruction{{Op: OpCall, Imm: id}}, nil, nil
	case "local":
		return jumpTarget(Instruction{Op: OpCall, Src: PseudoCall}, target, true)
	case "runtime":
		id, err := parseImm32(target)
		if err != nil {
			return nil, nil, fmt.Errorf("runtime function id: %w", err)
		}
		return []Instruction{{Op: OpCall, Src: 2, Imm: id}}, nil, nil
	}
	return nil, nil, fmt.Errorf("unknown call mode %q (want local, helper or runtime)", mode)
}

func parseAtomic(rest string, ops []string) (Instruction, error) {
	// rest is "[fetch] OP[32] [dst+off], src"; ops split it at the comma.
	if len(ops) != 2 {
		return Instruction{}, fmt.Errorf("lock takes \"[fetch] OP [%%rD+OFF], %%rS\", got %q", rest)
	}
	words := strings.Fields(ops[0])
	fetch := false
	if len(words) > 0 && words[0] == "fetch" {
		fetch, words = true, words[1:]
	}
	if len(words) < 2 {
		return Instruction{}, fmt.Errorf("lock: want an operation and a memory operand, got %q", ops[0])
	}
	name, size := words[0], SizeDW
	if base, ok := strings.CutSuffix(name, "32"); ok {
		name, size = base, SizeW
	} else if base, ok := strings.CutSuffix(name, "64"); ok {
		name = base
	}
	imm, ok := atomicByName[name]
	if !ok {
		return Instruction{}, fmt.Errorf("unknown atomic operation %q (want add, or, and, xor, xchg or cmpxchg)", words[0])
	}
	if fetch {
		imm |= AtomicFetch
	}
	dst, off, err := parseMemory(strings.Join(words[1:], ""))
	if err != nil {
		return Instruction{}, err
	}
	src, err := parseRegister(ops[1])
	if err != nil {
		return Instruction{}, err
	}
	return Instruction{Op: MemOpCode(ClassSTX, ModeAtomic, size), Dst: dst, Src: src, Off: off, Imm: imm}, nil
}

func parseLddw(ops []string) ([]Instruction, *labelRef, error) {
	if err := wantOperands("lddw", ops, 2); err != nil {
		return nil, nil, err
	}
	dst, err := parseRegister(ops[0])
	if err != nil {
		return nil, nil, err
	}
	v := ops[1]
	if inner, ok := strings.CutPrefix(v, "map("); ok {
		idx, rest, ok := strings.Cut(inner, ")")
		if !ok || rest != "" {
			return nil, nil, fmt.Errorf("bad map reference %q: want map(INDEX)", v)
		}
		i, err := parseImm32(idx)
		if err != nil {
			return nil, nil, fmt.Errorf("map index: %w", err)
		}
		return []Instruction{{Op: OpLdImm64, Dst: dst, Src: PseudoMapFD, Imm: i}, {}}, nil, nil
	}
	if inner, ok := strings.CutPrefix(v, "map_value("); ok {
		idx, rest, ok := strings.Cut(inner, ")")
		if !ok || (rest != "" && rest[0] != '+' && rest[0] != '-') {
			return nil, nil, fmt.Errorf("bad map value reference %q: want map_value(INDEX)+OFFSET", v)
		}
		i, err := parseImm32(idx)
		if err != nil {
			return nil, nil, fmt.Errorf("map index: %w", err)
		}
		var off int32
		if rest != "" {
			if off, err = parseImm32(rest); err != nil {
				return nil, nil, fmt.Errorf("map value offset: %w", err)
			}
		}
		return []Instruction{{Op: OpLdImm64, Dst: dst, Src: PseudoMapValue, Imm: i}, {Imm: off}}, nil, nil
	}
	n, err := parseNumber(v)
	if err != nil {
		return nil, nil, err
	}
	var u uint64
	switch {
	case !n.neg:
		u = n.mag
	case n.mag <= 1<<63:
		u = -n.mag
	default:
		return nil, nil, fmt.Errorf("immediate %s is out of 64-bit range", v)
	}
	pair := LdImm64(dst, u)
	return pair[:], nil, nil
}

// parseEndian handles le16..le64, be16..be64, bswap16..bswap64 (alias swap).
func parseEndian(mnemonic string, ops []string) (Instruction, bool, error) {
	var op OpCode
	var width string
	switch {
	case strings.HasPrefix(mnemonic, "le"):
		op, width = ALUOpCode(ClassALU, ALUEnd, SourceK), mnemonic[2:]
	case strings.HasPrefix(mnemonic, "be"):
		op, width = ALUOpCode(ClassALU, ALUEnd, SourceX), mnemonic[2:]
	case strings.HasPrefix(mnemonic, "bswap"):
		op, width = ALUOpCode(ClassALU64, ALUEnd, SourceK), mnemonic[5:]
	case strings.HasPrefix(mnemonic, "swap"):
		op, width = ALUOpCode(ClassALU64, ALUEnd, SourceK), mnemonic[4:]
	default:
		return Instruction{}, false, nil
	}
	var imm int32
	switch width {
	case "16":
		imm = 16
	case "32":
		imm = 32
	case "64":
		imm = 64
	default:
		return Instruction{}, false, nil
	}
	if err := wantOperands(mnemonic, ops, 1); err != nil {
		return Instruction{}, true, err
	}
	dst, err := parseRegister(ops[0])
	return Instruction{Op: op, Dst: dst, Imm: imm}, true, err
}

// parseLoadStore handles ldx*, ldxs*, st*, stx*, ldabs*, ldind*.
func parseLoadStore(mnemonic string, ops []string) (Instruction, bool, error) {
	// uBPF's spelling of the sign-extending loads: ldxbsx, ldxhsx, ldxwsx.
	if m, ok := strings.CutSuffix(mnemonic, "sx"); ok && strings.HasPrefix(m, "ldx") && len(m) == 4 {
		mnemonic = "ldxs" + m[3:]
	}
	type form struct {
		class Class
		mode  Mode
	}
	var f form
	var suffix string
	for _, p := range []struct {
		prefix string
		form   form
	}{
		{"ldxs", form{ClassLDX, ModeMEMSX}}, {"ldx", form{ClassLDX, ModeMEM}},
		{"ldabs", form{ClassLD, ModeABS}}, {"ldind", form{ClassLD, ModeIND}},
		{"stx", form{ClassSTX, ModeMEM}}, {"st", form{ClassST, ModeMEM}},
	} {
		if s, ok := strings.CutPrefix(mnemonic, p.prefix); ok {
			if _, ok := sizeByName[s]; ok {
				f, suffix = p.form, s
				break
			}
		}
	}
	if suffix == "" {
		return Instruction{}, false, nil
	}
	size := sizeByName[suffix]
	if f.mode == ModeMEMSX && size == SizeDW {
		return Instruction{}, true, fmt.Errorf("%s: there is no sign-extending 64-bit load (use ldxdw)", mnemonic)
	}
	ins := Instruction{Op: MemOpCode(f.class, f.mode, size)}
	var err error
	switch {
	case f.class == ClassLDX:
		if err = wantOperands(mnemonic, ops, 2); err != nil {
			return ins, true, err
		}
		if ins.Dst, err = parseRegister(ops[0]); err != nil {
			return ins, true, err
		}
		ins.Src, ins.Off, err = parseMemory(ops[1])
	case f.mode == ModeABS:
		if err = wantOperands(mnemonic, ops, 1); err != nil {
			return ins, true, err
		}
		ins.Imm, err = parseImm32(ops[0])
	case f.mode == ModeIND:
		if err = wantOperands(mnemonic, ops, 2); err != nil {
			return ins, true, err
		}
		if ins.Src, err = parseRegister(ops[0]); err != nil {
			return ins, true, err
		}
		ins.Imm, err = parseImm32(ops[1])
	case f.class == ClassST:
		if err = wantOperands(mnemonic, ops, 2); err != nil {
			return ins, true, err
		}
		if ins.Dst, ins.Off, err = parseMemory(ops[0]); err != nil {
			return ins, true, err
		}
		ins.Imm, err = parseImm32(ops[1])
	default: // STX
		if err = wantOperands(mnemonic, ops, 2); err != nil {
			return ins, true, err
		}
		if ins.Dst, ins.Off, err = parseMemory(ops[0]); err != nil {
			return ins, true, err
		}
		ins.Src, err = parseRegister(ops[1])
	}
	return ins, true, err
}

// parseALU handles the ALU and ALU64 instructions, including neg, the
// signed sdiv/smod and the sign-extending movsx forms.
func parseALU(mnemonic string, ops []string) (Instruction, bool, error) {
	class, base := ClassALU64, mnemonic
	if b, ok := strings.CutSuffix(mnemonic, "32"); ok {
		class, base = ClassALU, b
	} else if b, ok := strings.CutSuffix(mnemonic, "64"); ok {
		base = b
	}
	var op ALUOp
	var off int16
	switch base {
	case "sdiv":
		op, off = ALUDiv, 1
	case "smod":
		op, off = ALUMod, 1
	case "movsx8":
		op, off = ALUMov, 8
	case "movsx16":
		op, off = ALUMov, 16
	case "movsx32":
		if class == ClassALU {
			return Instruction{}, true, fmt.Errorf("%s: a 32-bit move cannot sign-extend from 32 bits (movsx832, movsx1632, movsx864, movsx1664, movsx3264 exist)", mnemonic)
		}
		op, off = ALUMov, 32
	default:
		var ok bool
		if op, ok = aluByName[base]; !ok {
			return Instruction{}, false, nil
		}
	}
	ins := Instruction{Off: off}
	if op == ALUNeg {
		if err := wantOperands(mnemonic, ops, 1); err != nil {
			return ins, true, err
		}
		dst, err := parseRegister(ops[0])
		ins.Op, ins.Dst = ALUOpCode(class, op, SourceK), dst
		return ins, true, err
	}
	if err := wantOperands(mnemonic, ops, 2); err != nil {
		return ins, true, err
	}
	var err error
	if ins.Dst, err = parseRegister(ops[0]); err != nil {
		return ins, true, err
	}
	if _, isReg := registerOperand(ops[1]); isReg {
		ins.Op = ALUOpCode(class, op, SourceX)
		ins.Src, err = parseRegister(ops[1])
		return ins, true, err
	}
	if op == ALUMov && off != 0 {
		return ins, true, fmt.Errorf("%s takes a source register, got %q", mnemonic, ops[1])
	}
	ins.Op = ALUOpCode(class, op, SourceK)
	ins.Imm, err = parseImm32(ops[1])
	return ins, true, err
}

// registerOperand reports whether s is written as a register (%rN or rN).
func registerOperand(s string) (string, bool) {
	if t, ok := strings.CutPrefix(s, "%"); ok {
		return t, true
	}
	if len(s) >= 2 && s[0] == 'r' && s[1] >= '0' && s[1] <= '9' {
		return s, true
	}
	return s, false
}

func parseRegister(s string) (Register, error) {
	t, ok := registerOperand(s)
	if !ok || !strings.HasPrefix(t, "r") {
		return 0, fmt.Errorf("want a register %%r0-%%r10, got %q", s)
	}
	n, err := strconv.ParseUint(t[1:], 10, 8)
	if err != nil || n > 15 {
		return 0, fmt.Errorf("want a register %%r0-%%r10, got %q", s)
	}
	return Register(n), nil
}

// parseMemory parses "[%rN]", "[%rN+OFF]" or "[%rN-OFF]".
func parseMemory(s string) (Register, int16, error) {
	inner, ok := strings.CutPrefix(strings.ReplaceAll(s, " ", ""), "[")
	if ok {
		inner, ok = strings.CutSuffix(inner, "]")
	}
	if !ok {
		return 0, 0, fmt.Errorf("want a memory operand [%%rN+OFFSET], got %q", s)
	}
	i := strings.IndexAny(inner, "+-")
	if i < 0 {
		r, err := parseRegister(inner)
		return r, 0, err
	}
	r, err := parseRegister(inner[:i])
	if err != nil {
		return 0, 0, err
	}
	off, err := parseOff16(inner[i:])
	if err != nil {
		return 0, 0, fmt.Errorf("memory offset: %w", err)
	}
	return r, off, nil
}

// number is a parsed integer literal: its sign and magnitude.
type number struct {
	neg bool
	hex bool
	mag uint64
}

func isNumber(s string) bool {
	_, err := parseNumber(s)
	return err == nil
}

// parseNumber parses [+-]DECIMAL or [+-]0xHEX. Leading zeros are decimal,
// never octal.
func parseNumber(s string) (number, error) {
	t := s
	var n number
	if r, ok := strings.CutPrefix(t, "-"); ok {
		n.neg, t = true, r
	} else if r, ok := strings.CutPrefix(t, "+"); ok {
		t = r
	}
	base := 10
	if r, ok := strings.CutPrefix(strings.ToLower(t), "0x"); ok {
		base, t, n.hex = 16, r, true
	}
	if t == "" || t[0] == '+' || t[0] == '-' || t[0] == '_' {
		return n, fmt.Errorf("want a number, got %q", s)
	}
	v, err := strconv.ParseUint(t, base, 64)
	if err != nil {
		if errors.Is(err, strconv.ErrRange) {
			return n, fmt.Errorf("number %q is out of 64-bit range", s)
		}
		return n, fmt.Errorf("want a number, got %q", s)
	}
	n.mag = v
	return n, nil
}

// parseImm32 accepts -2^31 .. 2^31-1, and hex up to 0xffffffff (which
// wraps, so that both 0xffffffff and -1 mean all ones).
func parseImm32(s string) (int32, error) {
	n, err := parseNumber(s)
	if err != nil {
		return 0, err
	}
	switch {
	case n.neg && n.mag <= 1<<31:
		return int32(-int64(n.mag)), nil
	case !n.neg && (n.mag <= 1<<31-1 || n.hex && n.mag <= 1<<32-1):
		return int32(uint32(n.mag)), nil
	}
	return 0, fmt.Errorf("immediate %s does not fit in 32 bits", s)
}

// parseOff16 accepts -2^15 .. 2^15-1, and hex up to 0xffff (which wraps).
func parseOff16(s string) (int16, error) {
	n, err := parseNumber(s)
	if err != nil {
		return 0, err
	}
	switch {
	case n.neg && n.mag <= 1<<15:
		return int16(-int64(n.mag)), nil
	case !n.neg && (n.mag <= 1<<15-1 || n.hex && n.mag <= 1<<16-1):
		return int16(uint16(n.mag)), nil
	}
	return 0, fmt.Errorf("offset %s does not fit in 16 bits", s)
}
