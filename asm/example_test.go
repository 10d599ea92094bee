package asm_test

import (
	"fmt"

	"github.com/ncclbpf/ncclbpf/asm"
)

func ExampleAssemble() {
	insns, err := asm.Assemble(`
		mov %r0, 0
		ldxw %r2, [%r1+4]   # a comment
		jgt %r2, 100, big
		exit
	big:
		lddw %r0, 0x100000000
		exit`)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, ins := range insns {
		fmt.Printf("%#016x\n", ins.Word())
	}
	// Output:
	// 0x00000000000000b7
	// 0x0000000000041261
	// 0x0000006400010225
	// 0x0000000000000095
	// 0x0000000000000018
	// 0x0000000100000000
	// 0x0000000000000095
}

func ExampleFormat() {
	insns, _ := asm.Assemble("mov32 %r0, 1\nlddw %r1, 0x1122334455667788\nlock fetch add [%r10-8], %r1\njne %r0, %r1, done\nexit\ndone: exit")
	fmt.Print(asm.Format(insns))
	// Output:
	// mov32 %r0, 1
	// lddw %r1, 0x1122334455667788
	// lock fetch add [%r10-8], %r1
	// jne %r0, %r1, +1
	// exit
	// exit
}

func ExampleAssemble_error() {
	_, err := asm.Assemble("mov %r0, 1\nldxw %r0, [%r11+0x10000]\nexit")
	fmt.Println(err)
	// Output:
	// line 2: memory offset: offset +0x10000 does not fit in 16 bits (in "ldxw %r0, [%r11+0x10000]")
}
