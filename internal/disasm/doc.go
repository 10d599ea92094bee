// Package disasm prints eBPF programs for reading, as ncclbpf disasm does:
// the programs of an ELF object with their C source lines interleaved,
// functions labelled and map, variable, helper and jump targets annotated;
// a .data conformance test; or raw instruction bytes. Each instruction is
// "PC: TEXT" in the uBPF assembler dialect (ncclbpf asm reads it back);
// Plain prints only the text, JSON every instruction as an object, and JIT
// the native code (x86-64 or AArch64) each instruction compiled to, from
// jit/listing, with placeholder addresses for maps and helpers.
package disasm
