// Package cross holds the tests that prove the linux/arm64 build on an
// x86-64 machine: they cross-compile test binaries with the distribution's
// aarch64 cross compiler (cgo) and run them under qemu-aarch64 user-mode
// emulation. scripts/setup.sh installs both tools; a missing tool fails the
// tests (it is not a skip).
//
// Environment:
//
//	NCCLBPF_ARM64_DIFF_N   programs of the arm64 differential test
//	                       (default 3000; scripts/test-long.sh runs 1000000)
//	NCCLBPF_QEMU_AARCH64   the emulator (default: qemu-aarch64 on PATH)
//	NCCLBPF_AARCH64_CC     the cross compiler (default aarch64-linux-gnu-gcc)
//	NCCLBPF_AARCH64_SYSROOT the target's libraries (default /usr/aarch64-linux-gnu)
package cross
