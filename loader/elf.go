package loader

import (
	"debug/elf"
	"fmt"
	"io"

	"github.com/ncclbpf/ncclbpf/asm"
)

// maxLinkedSlots bounds programs × instruction slots of an object (see
// openObject); Linux allows one million instructions per program.
const maxLinkedSlots = 1 << 22

// rawFunc is where a function's instruction bytes are in the object.
type rawFunc struct {
	section *elf.Section
	offset  uint64
	size    uint64
}

// objectFile is what the loader reads from the ELF file itself, besides
// what cilium/ebpf gives: the raw bytes of each function, so that
// instructions reach the spec exactly as the compiler wrote them.
type objectFile struct {
	funcs map[string]rawFunc
	// objects maps the name of each data symbol (maps, variables) to the
	// name of its section, for error messages.
	objects map[string]string
	// hasBTF and hasBTFExt say whether the sections .BTF and .BTF.ext exist.
	hasBTF, hasBTFExt bool
}

// openObject checks the ELF header (64-bit, little-endian, BPF machine)
// and indexes the function symbols of executable sections.
func openObject(r io.ReaderAt) (*objectFile, error) {
	f, err := elf.NewFile(r)
	if err != nil {
		var magic [4]byte
		switch n, rerr := r.ReadAt(magic[:], 0); {
		case n == 0 && rerr == io.EOF:
			return nil, fmt.Errorf("empty file, not an ELF object: %w", err)
		case n == len(magic) && string(magic[:]) == elf.ELFMAG:
			return nil, fmt.Errorf("damaged ELF object (truncated, or its headers are corrupt): %w", err)
		}
		return nil, fmt.Errorf("not an ELF object: %w", err)
	}
	if f.Class != elf.ELFCLASS64 {
		return nil, fmt.Errorf("ELF class %s: eBPF objects are 64-bit (ELFCLASS64)", f.Class)
	}
	if f.Data != elf.ELFDATA2LSB {
		return nil, fmt.Errorf("ELF byte order %s: only little-endian objects are supported (compile with -target bpf or bpfel): %w", f.Data, ErrNotSupported)
	}
	// Old LLVM versions wrote EM_NONE.
	if f.Machine != elf.EM_BPF && f.Machine != elf.EM_NONE {
		return nil, fmt.Errorf("ELF machine %s: not an eBPF object (want EM_BPF; compile with clang -target bpf)", f.Machine)
	}
	if f.Type != elf.ET_REL {
		return nil, fmt.Errorf("ELF type %s: want a relocatable object (ET_REL), as clang -c writes", f.Type)
	}

	obj := &objectFile{
		funcs:     make(map[string]rawFunc),
		objects:   make(map[string]string),
		hasBTF:    f.Section(".BTF") != nil,
		hasBTFExt: f.Section(".BTF.ext") != nil,
	}
	syms, err := f.Symbols()
	if err != nil {
		return nil, fmt.Errorf("reading symbol table: %w", err)
	}
	dup := make(map[string]bool)
	for _, s := range syms {
		if s.Name == "" || s.Section == elf.SHN_UNDEF || int(s.Section) >= len(f.Sections) {
			continue
		}
		sec := f.Sections[s.Section]
		typ, bind := elf.ST_TYPE(s.Info), elf.ST_BIND(s.Info)
		if typ == elf.STT_OBJECT {
			obj.objects[s.Name] = sec.Name
		}
		if sec.Flags&elf.SHF_EXECINSTR == 0 || sec.Type != elf.SHT_PROGBITS {
			continue
		}
		// The same selection cilium/ebpf makes: functions, and untyped
		// symbols that are not local jump labels.
		if typ != elf.STT_FUNC && (typ != elf.STT_NOTYPE || bind == elf.STB_LOCAL) {
			continue
		}
		if _, ok := obj.funcs[s.Name]; ok {
			dup[s.Name] = true
		}
		obj.funcs[s.Name] = rawFunc{section: sec, offset: s.Value, size: s.Size}
	}
	// cilium/ebpf links every program with all it calls before we see
	// the result; bound the worst case (every program calling all the
	// code) so that a small hostile object cannot ask for gigabytes.
	var slots, progs uint64
	for _, sec := range f.Sections {
		if sec.Flags&elf.SHF_EXECINSTR != 0 && sec.Type == elf.SHT_PROGBITS {
			slots += min(sec.Size/asm.InstructionSize, maxLinkedSlots+1) // no overflow
		}
	}
	for _, fn := range obj.funcs {
		if fn.section.Name != ".text" {
			progs++
		}
	}
	if slots > maxLinkedSlots || progs*slots > maxLinkedSlots {
		return nil, fmt.Errorf("object too large: %d programs and %d instruction slots could link to %d slots (limit %d)", progs, slots, progs*slots, maxLinkedSlots)
	}
	for name := range dup {
		// Only an error if a program uses it; remember by poisoning.
		obj.funcs[name] = rawFunc{}
	}
	return obj, nil
}

// instructions returns the slots of function name as they are in the
// object.
func (o *objectFile) instructions(name string) ([]asm.Instruction, error) {
	fn, ok := o.funcs[name]
	if !ok {
		return nil, fmt.Errorf("function %q: no symbol in an executable section", name)
	}
	if fn.section == nil {
		return nil, fmt.Errorf("function %q: symbol defined more than once", name)
	}
	if fn.section.ReaderAt == nil {
		return nil, fmt.Errorf("function %q: section %q is compressed: %w", name, fn.section.Name, ErrNotSupported)
	}
	if fn.size%asm.InstructionSize != 0 || fn.offset%asm.InstructionSize != 0 {
		return nil, fmt.Errorf("function %q: offset %d or size %d in section %q is not a multiple of %d", name, fn.offset, fn.size, fn.section.Name, asm.InstructionSize)
	}
	if fn.offset > fn.section.Size || fn.size > fn.section.Size-fn.offset {
		return nil, fmt.Errorf("function %q: bytes [%d, %d) lie outside section %q (size %d)", name, fn.offset, fn.offset+fn.size, fn.section.Name, fn.section.Size)
	}
	// cilium/ebpf has already read these bytes, so the section holds them
	// and the size is not a hostile header field.
	b, err := io.ReadAll(io.NewSectionReader(fn.section, int64(fn.offset), int64(fn.size)))
	if err != nil {
		return nil, fmt.Errorf("function %q: reading section %q: %w", name, fn.section.Name, err)
	}
	if uint64(len(b)) != fn.size {
		return nil, fmt.Errorf("function %q: section %q is truncated", name, fn.section.Name)
	}
	return asm.Decode(b)
}

// Incomplete reports whether b looks like the first part of an ELF object
// still being written: empty, a prefix of an ELF header, or shorter than
// the end of the section header table its 64-bit little-endian header
// places (clang writes that table last). want is the size the header
// implies, 0 when the header itself is not complete. A damaged object
// whose header is whole and consistent with its size is not incomplete.
func Incomplete(b []byte) (want int64, incomplete bool) {
	const ehdrSize = 64
	magic := []byte(elf.ELFMAG)
	if len(b) < len(magic) {
		return 0, string(b) == string(magic[:len(b)])
	}
	if string(b[:len(magic)]) != elf.ELFMAG {
		return 0, false
	}
	if len(b) < ehdrSize {
		return 0, true
	}
	if elf.Class(b[elf.EI_CLASS]) != elf.ELFCLASS64 || elf.Data(b[elf.EI_DATA]) != elf.ELFDATA2LSB {
		return 0, false
	}
	le := func(off, n int) uint64 {
		var v uint64
		for i := n - 1; i >= 0; i-- {
			v = v<<8 | uint64(b[off+i])
		}
		return v
	}
	shoff, shentsize, shnum := le(0x28, 8), le(0x3a, 2), le(0x3c, 2)
	if shoff == 0 || shoff > 1<<40 {
		return 0, false
	}
	end := shoff + shentsize*shnum
	if end > uint64(len(b)) {
		return int64(end), true
	}
	return 0, false
}
