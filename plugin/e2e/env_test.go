package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/ncclbpf/ncclbpf/internal/buildrecipe"
	"github.com/ncclbpf/ncclbpf/internal/envconfig"
)

// envHost builds testhost/env_host.c once per test and runs it on the
// library: NCCL's env plugin loader (ncclEnvPlugin_vVER, init, getEnv of
// each name).
func envHost(t *testing.T, env []string, ver string, names ...string) string {
	t.Helper()
	artifacts(t)
	root := repoRoot(t)
	host := filepath.Join(t.TempDir(), "env_host")
	if err := buildSteps(root, []buildrecipe.Step{{Target: "env-host", Out: host}}); err != nil {
		t.Fatalf("building env_host: %v", err)
	}
	cmd := hostCommand(host, append([]string{art.lib, ver}, names...)...)
	cmd.Env = append(cleanEnv(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("env_host %v: %v\n%s", names, err, out)
	}
	return string(out)
}

func digestOf(t *testing.T, out string) string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^digest ([0-9a-f]{16})$`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no digest in:\n%s", out)
	}
	return m[1]
}

func writeConf(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "nccl.conf")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestEnvPlugin: ncclEnvPlugin_v2 and _v1 serve the values of
// NCCLBPF_ENV_FILE (nccl.conf syntax: comments, spaces, the last setting
// wins) and the process environment for the rest; v2 logs what it read and
// each value from the file once; no file or an unreadable one: one warning,
// the environment as usual. The digest follows every value served.
func TestEnvPlugin(t *testing.T) {
	conf := writeConf(t, "# a comment\n\n NCCL_ALGO = Ring \nNCCL_PROTO=LL128\nNCCL_PROTO=Simple\nnot a setting\n")
	names := []string{"NCCL_ALGO", "NCCL_PROTO", "NCCL_IB_HCA", "NCCL_NOT_SET"}
	base := []string{envconfig.EnvFile + "=" + conf, "NCCL_IB_HCA=mlx5_0", "NCCL_ALGO=Tree"}

	out := envHost(t, base, "2", names...)
	for _, want := range []string{"name ncclbpf", "NCCL_ALGO=Ring\n", "NCCL_PROTO=Simple\n", "NCCL_IB_HCA=mlx5_0\n",
		"NCCL_NOT_SET=(unset)\n", "2 values from " + conf + " for NCCL 2.30.7", "warnings 0"} {
		if !strings.Contains(out, want) {
			t.Errorf("v2: no %q in:\n%s", want, out)
		}
	}
	if n := strings.Count(out, "env: NCCL_PROTO=Simple (from "); n != 1 {
		t.Errorf("v2: NCCL_PROTO logged %d times, want once:\n%s", n, out)
	}
	if strings.Contains(out, "env: NCCL_IB_HCA") {
		t.Errorf("v2: a value from the environment was logged as from the file:\n%s", out)
	}
	d := digestOf(t, out)

	v1 := envHost(t, base, "1", names...)
	if !strings.Contains(v1, "NCCL_ALGO=Ring\n") || !strings.Contains(v1, "NCCL_IB_HCA=mlx5_0\n") {
		t.Errorf("v1:\n%s", v1)
	}
	if digestOf(t, v1) != d {
		t.Errorf("v1 and v2 served the same values, digests %s and %s", digestOf(t, v1), d)
	}

	// The same values: the same digest; another value from the file or from
	// the environment: another digest.
	if again := digestOf(t, envHost(t, base, "2", names...)); again != d {
		t.Errorf("same environment, digests %s and %s", d, again)
	}
	other := writeConf(t, "NCCL_ALGO=Tree\nNCCL_PROTO=Simple\n")
	if o := digestOf(t, envHost(t, []string{envconfig.EnvFile + "=" + other, "NCCL_IB_HCA=mlx5_0"}, "2", names...)); o == d {
		t.Errorf("NCCL_ALGO Ring vs Tree from the file: same digest %s", d)
	}
	if o := digestOf(t, envHost(t, []string{envconfig.EnvFile + "=" + conf, "NCCL_IB_HCA=mlx5_1"}, "2", names...)); o == d {
		t.Errorf("NCCL_IB_HCA mlx5_0 vs mlx5_1 from the environment: same digest %s", d)
	}

	for name, env := range map[string][]string{
		"unset":      {"NCCL_ALGO=Tree"},
		"unreadable": {envconfig.EnvFile + "=" + filepath.Join(t.TempDir(), "absent.conf"), "NCCL_ALGO=Tree"},
	} {
		out := envHost(t, env, "2", "NCCL_ALGO", "NCCL_PROTO")
		if !strings.Contains(out, "NCCL_ALGO=Tree\n") || !strings.Contains(out, "NCCL_PROTO=(unset)\n") ||
			!strings.Contains(out, "warnings 1\n") || !strings.Contains(out, "reads the process environment as usual") {
			t.Errorf("%s file: want the environment and one warning:\n%s", name, out)
		}
	}
}

// TestEnvPluginExported: both versions are data symbols of the library.
func TestEnvPluginExported(t *testing.T) {
	artifacts(t)
	out, err := exec.Command("nm", "-D", "--defined-only", art.lib).Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"ncclEnvPlugin_v2", "ncclEnvPlugin_v1", "ncclProfiler_v7", "ncclTunerPlugin_v7"} {
		if !regexp.MustCompile(`(?m) [DR] ` + s + `$`).Match(out) {
			t.Errorf("%s is not exported as a data symbol", s)
		}
	}
}
