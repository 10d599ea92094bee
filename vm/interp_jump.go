package vm

import "github.com/ncclbpf/ncclbpf/asm"

// cond64 evaluates the JMP condition op on d (dst) and s (src or the
// sign-extended imm).
func cond64(op asm.JumpOp, d, s uint64) bool {
	switch op {
	case asm.JumpEq:
		return d == s
	case asm.JumpNE:
		return d != s
	case asm.JumpGT:
		return d > s
	case asm.JumpGE:
		return d >= s
	case asm.JumpLT:
		return d < s
	case asm.JumpLE:
		return d <= s
	case asm.JumpSet:
		return d&s != 0
	case asm.JumpSGT:
		return int64(d) > int64(s)
	case asm.JumpSGE:
		return int64(d) >= int64(s)
	case asm.JumpSLT:
		return int64(d) < int64(s)
	default: // asm.JumpSLE
		return int64(d) <= int64(s)
	}
}

// cond32 evaluates the JMP32 condition op on the low 32 bits of d and s.
func cond32(op asm.JumpOp, d64, s64 uint64) bool {
	d, s := uint32(d64), uint32(s64)
	switch op {
	case asm.JumpEq:
		return d == s
	case asm.JumpNE:
		return d != s
	case asm.JumpGT:
		return d > s
	case asm.JumpGE:
		return d >= s
	case asm.JumpLT:
		return d < s
	case asm.JumpLE:
		return d <= s
	case asm.JumpSet:
		return d&s != 0
	case asm.JumpSGT:
		return int32(d) > int32(s)
	case asm.JumpSGE:
		return int32(d) >= int32(s)
	case asm.JumpSLT:
		return int32(d) < int32(s)
	default: // asm.JumpSLE
		return int32(d) <= int32(s)
	}
}
