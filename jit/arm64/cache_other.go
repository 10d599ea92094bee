//go:build !arm64

package arm64

// syncICache: the code never runs on this architecture.
func syncICache(uintptr, int) {}

// hasLSE: code compiled on another architecture (for its size or
// disassembly) uses the LSE atomics, which every Grace-class CPU has.
func hasLSE() bool { return true }
