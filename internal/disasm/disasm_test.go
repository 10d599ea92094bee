package disasm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/ncclbpf/ncclbpf/asm"
)

func TestWriteRawInstructions(t *testing.T) {
	insns, err := asm.Assemble("mov %r0, 1\nja +1\nmov %r0, 2\nexit\n")
	if err != nil {
		t.Fatal(err)
	}
	raw := asm.Encode(insns)
	var b bytes.Buffer
	if err := Write(&b, "prog.bin", raw, &Options{}); err != nil {
		t.Fatal(err)
	}
	if want := "0: mov %r0, 1\n1: " + fmt.Sprintf("%-32s", "ja +1") + " # -> 3\n2: mov %r0, 2\n3: exit\n"; b.String() != want {
		t.Errorf("listing:\n%s\nwant\n%s", b.String(), want)
	}
	b.Reset()
	if err := Write(&b, "prog.bin", raw, &Options{Plain: true}); err != nil {
		t.Fatal(err)
	}
	if back, err := asm.Assemble(b.String()); err != nil || !bytes.Equal(asm.Encode(back), raw) {
		t.Errorf("--plain text does not assemble back to the same bytes: %v\n%s", err, b.String())
	}
	b.Reset()
	if err := Write(&b, "prog.bin", raw, &Options{JSON: true}); err != nil {
		t.Fatal(err)
	}
	var progs []Program
	if err := json.Unmarshal(b.Bytes(), &progs); err != nil || len(progs) != 1 || len(progs[0].Insns) != 4 || progs[0].Insns[1].Note != "-> 3" {
		t.Errorf("JSON: %v %+v", err, progs)
	}
}

func TestWriteRefusesWhatIsNoProgram(t *testing.T) {
	data := []byte("hello, world! 0123") // not a multiple of 8 bytes
	if err := Write(&bytes.Buffer{}, "notes.txt", data, &Options{}); err == nil || !strings.Contains(err.Error(), "notes.txt") {
		t.Errorf("text file: %v", err)
	}
	if err := Write(&bytes.Buffer{}, "empty", nil, &Options{}); err == nil || !strings.Contains(err.Error(), "empty") {
		t.Errorf("empty input: %v", err)
	}
}
