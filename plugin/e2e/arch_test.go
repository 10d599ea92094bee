package e2e

import (
	"os"
	"os/exec"

	"github.com/ncclbpf/ncclbpf/internal/envconfig"
)

// The plugin tests normally build libncclbpf.so and the C hosts for this
// machine and run them directly. NCCLBPF_TEST_ARCH=arm64 (set by
// internal/cross on x86-64) cross-builds them for linux/arm64 with the
// aarch64 cross compiler and runs the hosts under qemu-aarch64, so the same
// checks hold for the Grace-host build.

// crossArm64 reports whether the hosts and the library are built for arm64.
func crossArm64() bool { return os.Getenv(envconfig.TestArch) == "arm64" }

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// targetCC is the C compiler of the hosts and shims.
func targetCC() string {
	if crossArm64() {
		return envOr(envconfig.Aarch64CC, "aarch64-linux-gnu-gcc")
	}
	return "gcc"
}

// targetEnv is the extra environment of scripts/build.sh for the target.
func targetEnv() []string {
	if crossArm64() {
		return []string{"GOOS=linux", "GOARCH=arm64", "CC=" + targetCC()}
	}
	return []string{"CC=" + targetCC()}
}

// hostCommand runs a host built by targetCC: directly, or under
// qemu-aarch64 with the target's C library.
func hostCommand(path string, args ...string) *exec.Cmd {
	if !crossArm64() {
		return exec.Command(path, args...)
	}
	qemu := envOr(envconfig.QemuAarch64, "qemu-aarch64")
	return exec.Command(qemu, append([]string{"-L", envOr(envconfig.Aarch64Sysroot, "/usr/aarch64-linux-gnu"), path}, args...)...)
}
