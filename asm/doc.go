// Package asm models eBPF instructions as RFC 9669 defines them: one
// Instruction per 64-bit slot, so that a program counter (pc) is an index
// into []Instruction and jump offsets count slots, exactly as on the wire.
//
// The wide LD_IMM64 instruction occupies two slots; its second slot is an
// Instruction with opcode 0 whose Imm carries the upper 32 bits. Every
// stage of the pipeline (loader, verifier, interpreter, JIT) uses this
// representation, so a pc printed by one stage means the same slot in all.
//
// The package has no dependency on the kernel, cgo or unsafe.
package asm
