package policybench

import (
	"testing"
	"time"

	"github.com/ncclbpf/ncclbpf/jit/amd64"
	"github.com/ncclbpf/ncclbpf/jit/arm64"
	"github.com/ncclbpf/ncclbpf/vm"
)

// TestCodeSizeByArch compiles every example policy with the x86-64 and the
// AArch64 JIT (the AArch64 code is produced on any host; it runs only on
// arm64) and logs, side by side, the code size and the mean compile time
// (BENCHMARKS.md, "arm64"). Both must compile every program.
func TestCodeSizeByArch(t *testing.T) {
	const reps = 20
	t.Logf("%-34s %6s %9s %9s %6s %11s %11s", "program", "insns", "x86-64 B", "arm64 B", "ratio", "x86 comp", "arm64 comp")
	var sumX, sumA int
	for _, p := range load(t) {
		var sizes [2]int
		var times [2]time.Duration
		for i, compile := range []func(*vm.Program) (vm.Executable, error){
			func(p *vm.Program) (vm.Executable, error) { return amd64.Compile(p) },
			func(p *vm.Program) (vm.Executable, error) { return arm64.Compile(p) },
		} {
			start := time.Now()
			for r := 0; r < reps; r++ {
				x, err := compile(p.prog)
				if err != nil {
					t.Fatalf("%s: %v", p.name, err)
				}
				sizes[i] = len(x.(interface{ Code() []byte }).Code())
				x.Close()
			}
			times[i] = time.Since(start) / reps
		}
		sumX += sizes[0]
		sumA += sizes[1]
		t.Logf("%-34s %6d %9d %9d %6.2f %11v %11v", p.name, len(p.prog.Insns), sizes[0], sizes[1],
			float64(sizes[1])/float64(sizes[0]), times[0].Round(time.Microsecond), times[1].Round(time.Microsecond))
	}
	t.Logf("%-34s %6s %9d %9d %6.2f", "total", "", sumX, sumA, float64(sumA)/float64(sumX))
}
