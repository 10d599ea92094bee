package verifier_test

import (
	"errors"
	"fmt"
	"github.com/ncclbpf/ncclbpf/loader"

	"github.com/ncclbpf/ncclbpf/asm"
	"github.com/ncclbpf/ncclbpf/helpers"
	"github.com/ncclbpf/ncclbpf/hook"
	"github.com/ncclbpf/ncclbpf/verifier"
)

// A program that reads a map value without checking the lookup's result
// for null is rejected with a stable code, the pc and why.
func ExampleConfig_Verify() {
	h := &hook.Hook{
		Name:    "example",
		Context: hook.Context{Name: "ctx", Size: 8, Fields: []hook.Field{{Name: "x", Offset: 0, Size: 8, Access: hook.Read}}},
		Helpers: []helpers.ID{helpers.MapLookupElem},
		Return:  hook.Range{Min: 0, Max: 1},
	}
	insns, _ := asm.Assemble(`
		stw [%r10-4], 0
		mov %r2, %r10
		add %r2, -4
		lddw %r1, map(0)
		call 1
		ldxdw %r0, [%r0]
		and %r0, 1
		exit`)
	cfg := verifier.Config{Hook: h, Maps: []*loader.MapSpec{{Name: "counts", Type: verifier.MapTypeArray, KeySize: 4, ValueSize: 8, MaxEntries: 4}}}
	_, err := cfg.Verify(insns, nil)
	var ve *verifier.Error
	if errors.As(err, &ve) {
		fmt.Println(ve.Code)
		fmt.Println(ve.Error())
	}
	// Output:
	// E012 null-deref
	// E012 null-deref: read through r0, which may be null (map value pointer or null counts+0 (value_size 8)): compare it with 0 first (pc 6: ldxdw %r0, [%r0])
}
