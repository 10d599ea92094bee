package verifier

import "fmt"

// Code identifies the kind of a verification error or warning. Codes are
// stable: a code's number and name never change once published, and new
// codes are added at the end. Tools and tests match on the code, never on
// the message, which may be improved at any time.
//
// Code.String renders a code as "E012 null-deref" (errors) or
// "W100 div-by-zero" (warnings).
//
// Naming rule: the short name is a lower-case noun phrase naming what is
// wrong, so that "E012 null-deref at line 7" reads as a sentence.
type Code int

// Error codes. Each example is eBPF assembly in the kernel's notation.
const (
	_ Code = iota

	// InvalidOpcode: an instruction is not a known eBPF instruction, or one
	// of its reserved fields is not zero, or it is a legacy or unsupported
	// form (LD_ABS, LD_IND, CALLX).
	//
	// Example:
	//	r0 = *(u8 *)skb[4]   // LD_ABS
	InvalidOpcode

	// InvalidRegister: a register number is above r10, or the frame
	// pointer r10 is written.
	//
	// Example:
	//	r10 = 0
	InvalidRegister

	// JumpOutOfRange: a jump or call targets a pc outside the program.
	//
	// Example:
	//	goto +100   // in a 3-instruction program
	JumpOutOfRange

	// JumpIntoLdImm64: a jump targets the second slot of a 16-byte
	// LD_IMM64 instruction.
	//
	// Example:
	//	goto +1
	//	r1 = 0x1122334455667788 ll   // the jump lands in its second half
	JumpIntoLdImm64

	// MissingExit: a path runs past the last instruction without exit, or
	// the program (or a subprogram) is empty.
	//
	// Example:
	//	r0 = 0       // no exit follows
	MissingExit

	// UnreachableCode: an instruction can never execute. Dead code is
	// rejected because it cannot have been verified.
	//
	// Example:
	//	exit
	//	r0 = 1       // nothing jumps here
	UnreachableCode

	// TooManyInstructions: the program is longer than Config.MaxInsns.
	TooManyInstructions

	// CallDepth: BPF-to-BPF calls nest deeper than Config.MaxCallDepth, or
	// a subprogram calls itself directly or indirectly.
	//
	// Example:
	//	f: call f
	CallDepth

	// StackBudget: the stacks of the frames on one chain of calls use more
	// than Config.MaxStack bytes in total.
	StackBudget

	// UninitRegister: an instruction reads a register that has no value on
	// some path (never written, or clobbered by a call).
	//
	// Example:
	//	call bpf_ktime_get_ns
	//	r0 = r1      // r1 was clobbered by the call
	UninitRegister

	// UninitStack: a load (or a helper reading memory) reads stack bytes
	// that were not written on some path.
	//
	// Example:
	//	r0 = *(u64 *)(r10 - 8)   // nothing stored at fp-8
	UninitStack

	// NullDeref: a pointer that may be null (the result of
	// bpf_map_lookup_elem or bpf_ringbuf_reserve not yet compared with 0)
	// is dereferenced or passed where a valid pointer is needed.
	//
	// Example:
	//	call bpf_map_lookup_elem
	//	r1 = *(u64 *)(r0 + 0)    // no "if r0 == 0" before
	NullDeref

	// StackOutOfBounds: a stack access falls outside the frame's 512 bytes
	// [r10-512, r10), or its offset is not bounded.
	//
	// Example:
	//	*(u64 *)(r10 - 520) = r1
	StackOutOfBounds

	// MemOutOfBounds: an access to a map value or ringbuf record falls
	// outside [0, size) for some value of its (constant or variable)
	// offset, or the offset is not bounded.
	//
	// Example:
	//	r1 = *(u64 *)(r0 + 60)   // r0 points to a 64-byte map value
	MemOutOfBounds

	// CtxOutOfLayout: a context access does not lie inside one field the
	// hook declares, or the context pointer has a variable offset.
	//
	// Example:
	//	r2 = *(u32 *)(r1 + 1000)
	CtxOutOfLayout

	// CtxAccessDenied: a context field is written without the Write right,
	// or read without the Read right.
	//
	// Example:
	//	*(u32 *)(r1 + 0) = r2    // field 0 is read-only
	CtxAccessDenied

	// CtxWidth: a context access is not of the field's declared width.
	//
	// Example:
	//	r2 = *(u8 *)(r1 + 0)     // field 0 is a u32
	CtxWidth

	// UnknownHelper: a call names a helper id that has no prototype.
	//
	// Example:
	//	call 9999
	UnknownHelper

	// HelperNotAllowed: a call names a known helper that the hook does not
	// allow.
	//
	// Example:
	//	call bpf_ringbuf_output   // in a hook that lists only ktime
	HelperNotAllowed

	// BadHelperArg: a helper argument does not have the type its prototype
	// asks for (not a map handle, key not initialized or too short, size
	// not bounded, not a reserved ringbuf record, wrong map type, ...).
	//
	// Example:
	//	r1 = 1
	//	call bpf_map_lookup_elem  // r1 is not a map
	BadHelperArg

	// PointerLeak: a pointer would leave the program: stored into a map
	// value, a ringbuf record or a context field, returned in r0, or a
	// spilled pointer read back as partial bytes.
	//
	// Example:
	//	*(u64 *)(r0 + 0) = r10   // r0 points to a map value
	PointerLeak

	// NullablePointerArith: arithmetic on a pointer that may still be
	// null.
	//
	// Example:
	//	call bpf_map_lookup_elem
	//	r0 += 8                  // before "if r0 == 0"
	NullablePointerArith

	// BadPointerArith: an operation on a pointer other than adding or
	// subtracting a scalar (or subtracting two pointers into the same
	// region), a 32-bit operation on a pointer, arithmetic on a map
	// handle, or a variable offset added to the context pointer.
	//
	// Example:
	//	r1 *= 2                  // r1 is the context pointer
	BadPointerArith

	// PointerCompare: a comparison involves a pointer other than testing a
	// nullable pointer against 0.
	//
	// Example:
	//	if r1 > r10 goto +1
	PointerCompare

	// InfiniteLoop: a loop may run forever: the state at a loop head
	// repeats (is included in an earlier state on the same path).
	//
	// Example:
	//	l: r0 = 0
	//	   goto l
	InfiniteLoop

	// Complexity: verification needed more steps than its budget
	// (Config.Complexity or Config.Budget) allows; the loop or branching
	// structure is too complex to prove safe.
	Complexity

	// BadReturn: r0 at exit is not within the hook's declared return
	// range on some path.
	//
	// Example:
	//	r0 = 1000                // the hook returns 0..255
	//	exit
	BadReturn

	// NotAPointer: a load or store goes through a register that holds a
	// scalar or a map handle.
	//
	// Example:
	//	r1 = 4096
	//	r0 = *(u64 *)(r1 + 0)
	NotAPointer

	// ReadOnlyMap: a program writes a map it may only read: a store or
	// atomic update into a value of a read-only map (.rodata, or a map
	// declared BPF_F_RDONLY_PROG), or bpf_map_update_elem or
	// bpf_map_delete_elem on one.
	ReadOnlyMap

	// UnreleasedRef: the program exits while a ringbuf record reserved
	// with bpf_ringbuf_reserve is neither submitted nor discarded.
	UnreleasedRef

	// BadMapRef: an LD_IMM64 refers to a map index that does not exist, or
	// takes a value address in a map that has no direct value access.
	//
	// Example:
	//	r1 = map[7] ll           // only 2 maps
	BadMapRef

	// BadJumpTarget: a jump leaves the subprogram it belongs to, or a
	// call's target is not a subprogram entry.
	BadJumpTarget

	// RankDivergent: a tuner decision (algorithm, protocol, channel count,
	// chunk size, or the return value that applies them) depends on a
	// value that may differ between the ranks of a communicator: a clock,
	// a random number, a context field marked [local], or a map that holds
	// rank-local data. Ranks that decide differently hang the job.
	//
	// Example:
	//	call bpf_ktime_get_ns
	//	r0 &= 1
	//	*(u32 *)(r6 + 16) = r0   // ctx->algorithm depends on the clock
	RankDivergent

	// WriteOnlyMap: a program reads a map declared BPF_F_WRONLY_PROG
	// (through a value pointer, or by passing its memory to a helper).
	//
	// Example:
	//	r1 = *(u64 *)(r0 + 0)    // r0 points into a write-only map
	WriteOnlyMap

	// UseAfterRelease: a ringbuf record pointer is used after the record
	// was submitted or discarded (the record then belongs to the reader).
	//
	// Example:
	//	call bpf_ringbuf_submit  // r1 = r6, the record
	//	*(u64 *)(r6 + 0) = r7    // the record was already submitted
	UseAfterRelease

	// MisalignedAtomic: an atomic update's address may not be a multiple
	// of its width. A locked access that crosses a cache line is split
	// by the CPU (slow for every core, or a fault where split locks are
	// refused); stacks, map values and ringbuf records are 8-byte aligned.
	//
	// Example:
	//	lock *(u64 *)(r0 + 4) += r1
	MisalignedAtomic

	// WrongContext: the entry function declares its parameter, in BTF, as
	// a pointer to another struct than the context its hook passes (a
	// profiler context in a tuner program): its field offsets would be
	// another struct's.
	//
	// Example:
	//	SEC("tuner") int f(struct ncclbpf_prof_ctx *ctx)
	WrongContext
)

// Warning codes. A warning does not reject the program.
const (
	// DivByZero: a division or modulo's divisor may be zero. eBPF defines
	// the result (quotient 0, remainder unchanged), so the program is
	// accepted, but the divisor is probably not what was meant.
	//
	// Example:
	//	r0 /= r2                 // r2 may be 0
	DivByZero Code = 100 + iota
)

var codeNames = map[Code]string{
	InvalidOpcode:        "invalid-opcode",
	InvalidRegister:      "invalid-register",
	JumpOutOfRange:       "jump-out-of-range",
	JumpIntoLdImm64:      "jump-into-ldimm64",
	MissingExit:          "missing-exit",
	UnreachableCode:      "unreachable-code",
	TooManyInstructions:  "too-many-insns",
	CallDepth:            "call-depth",
	StackBudget:          "stack-budget",
	UninitRegister:       "uninit-register",
	UninitStack:          "uninit-stack",
	NullDeref:            "null-deref",
	StackOutOfBounds:     "stack-oob",
	MemOutOfBounds:       "mem-oob",
	CtxOutOfLayout:       "ctx-out-of-layout",
	CtxAccessDenied:      "ctx-access-denied",
	CtxWidth:             "ctx-width",
	UnknownHelper:        "unknown-helper",
	HelperNotAllowed:     "helper-not-allowed",
	BadHelperArg:         "bad-helper-arg",
	PointerLeak:          "pointer-leak",
	NullablePointerArith: "nullable-ptr-arith",
	BadPointerArith:      "bad-ptr-arith",
	PointerCompare:       "ptr-compare",
	InfiniteLoop:         "infinite-loop",
	Complexity:           "complexity",
	BadReturn:            "bad-return",
	NotAPointer:          "not-a-pointer",
	ReadOnlyMap:          "readonly-map",
	UnreleasedRef:        "unreleased-ref",
	BadMapRef:            "bad-map-ref",
	BadJumpTarget:        "bad-jump-target",
	RankDivergent:        "rank-divergent",
	WriteOnlyMap:         "writeonly-map",
	UseAfterRelease:      "use-after-release",
	MisalignedAtomic:     "misaligned-atomic",
	WrongContext:         "wrong-context",
	DivByZero:            "div-by-zero",
}

// IsWarning reports whether c is a warning code.
func (c Code) IsWarning() bool { return c >= DivByZero }

// Name returns the short name of c ("null-deref").
func (c Code) Name() string {
	if n, ok := codeNames[c]; ok {
		return n
	}
	return "unknown"
}

// String returns "E012 null-deref" for error codes and "W100 div-by-zero"
// for warnings.
func (c Code) String() string {
	p := "E"
	if c.IsWarning() {
		p = "W"
	}
	return fmt.Sprintf("%s%03d %s", p, int(c), c.Name())
}

// ParseCode returns the code whose String starts with s ("E012" or
// "E012 null-deref" or "null-deref").
func ParseCode(s string) (Code, bool) {
	for c, n := range codeNames {
		full := c.String()
		if s == full || s == n || s == full[:4] {
			return c, true
		}
	}
	return 0, false
}
