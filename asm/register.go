package asm

import "fmt"

// Register is an eBPF register number, r0 to r10.
type Register uint8

// Registers. R0 holds return values, R1-R5 arguments, R6-R9 are preserved
// across calls and R10 is the read-only frame pointer.
const (
	R0 Register = iota
	R1
	R2
	R3
	R4
	R5
	R6
	R7
	R8
	R9
	R10
	RFP = R10
)

// NumRegisters is the number of architectural registers.
const NumRegisters = 11

// StackSize is the size in bytes of one frame's stack, addressed below R10.
const StackSize = 512

func (r Register) String() string {
	if r > R10 {
		return fmt.Sprintf("r?%d", uint8(r))
	}
	return fmt.Sprintf("r%d", uint8(r))
}
