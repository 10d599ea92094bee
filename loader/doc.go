// Package loader turns an ELF object compiled by clang (-target bpf) into a
// CollectionSpec: programs as self-contained asm.Instruction slices, the maps
// they refer to, global variables and source-line information.
//
// It uses github.com/cilium/ebpf to parse ELF and BTF, and nothing else of
// it: no kernel, no bpf() syscall, no live objects. The result is a pure,
// deterministic spec: the same bytes always give the same CollectionSpec, and
// nothing in it depends on the machine that read it.
//
// # Instruction model
//
// Every program is linked on its own: the instructions of each BPF-to-BPF
// callee (static or global functions, usually in .text) are appended after
// the entry function, so a ProgramSpec's Insns need nothing outside themselves.
// References are resolved into the forms package vm documents:
//
//   - a map reference becomes LD_IMM64 with Src=asm.PseudoMapFD and
//     Imm = index into CollectionSpec.Maps;
//   - a reference to global data (.rodata, .data, .bss and their variants
//     such as .rodata.str1.1) becomes LD_IMM64 with Src=asm.PseudoMapValue,
//     Imm = index of the section's map and the second slot's Imm = byte
//     offset into the map's single value;
//   - a BPF-to-BPF call becomes CALL with Src=asm.PseudoCall and
//     Imm = target - (pc+1), the target being the first instruction of
//     the callee inside the same Insns;
//   - helper calls (Src=0, Imm = helper id) are left as they are.
//
// All other instruction bytes are copied from the object unchanged.
//
// # Maps
//
// BTF-defined maps (the ".maps" section, as libbpf's __uint/__type macros
// write them) and legacy "maps" sections (struct bpf_map_def) are both
// read. Each global-data section becomes a one-entry array map (type 2,
// key size 4, value size = section size) whose Contents are one entry: key 0
// and the section's initial bytes, zeroes for .bss; .rodata* sections are
// frozen and BPF_F_RDONLY_PROG. A VariableSpec's Set changes those bytes.
//
// # What is refused
//
// Features a userspace runtime cannot honour are reported as errors that
// wrap ErrNotSupported and name the section, symbol and feature: CO-RE
// relocations, kfuncs and kernel symbols, extern kconfig variables,
// function pointers (callbacks), tail calls, struct_ops, map-in-map,
// pinning and map types MapType.Supported does not accept. Malformed objects give
// errors, never panics.
package loader
