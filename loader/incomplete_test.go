package loader_test

import (
	"os"
	"testing"

	"github.com/ncclbpf/ncclbpf/loader"
)

// TestIncomplete: every strict prefix of a real object is incomplete, the
// whole object is not, nor are files that are no ELF object at all.
func TestIncomplete(t *testing.T) {
	b, err := os.ReadFile("../testhost/reload_a.bpf.o")
	if err != nil {
		t.Fatal(err)
	}
	if want, inc := loader.Incomplete(b); inc {
		t.Fatalf("the whole object is incomplete (want %d bytes)", want)
	}
	for n := 0; n < len(b); n++ {
		want, inc := loader.Incomplete(b[:n])
		if !inc {
			t.Fatalf("the first %d of %d bytes are not incomplete", n, len(b))
		}
		if n >= 64 && want != int64(len(b)) {
			t.Fatalf("the first %d bytes: want = %d, the object has %d", n, want, len(b))
		}
	}
	for _, s := range []string{"x", "hello world", "\x7fELX", "#!/bin/sh\necho hi\n"} {
		if _, inc := loader.Incomplete([]byte(s)); inc {
			t.Errorf("%q is incomplete", s)
		}
	}
	// a damaged object of the right size (its section headers zeroed)
	d := append([]byte(nil), b...)
	for i := len(d) - 64; i < len(d); i++ {
		d[i] = 0
	}
	if _, inc := loader.Incomplete(d); inc {
		t.Error("a damaged object of its full size is incomplete")
	}
}
