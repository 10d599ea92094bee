package conformance_test

import (
	"fmt"

	"github.com/ncclbpf/ncclbpf/internal/conformance"
	"github.com/ncclbpf/ncclbpf/vm"
)

func ExampleRun() {
	test, err := conformance.Parse("sum.data", []byte(`
-- asm
ldxb %r0, [%r1]
ldxb %r2, [%r1+1]
add %r0, %r2
exit
-- mem
05 07
-- result
0xc
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(conformance.Run(vm.NewInterpreter(), test))

	test.Result = 0xd
	fmt.Println(conformance.Run(vm.NewInterpreter(), test))
	// Output:
	// PASS sum.data
	// FAIL sum.data: r0 = 0xc, want 0xd
}
