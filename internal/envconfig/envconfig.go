// Package envconfig is the one list of the environment variables ncclbpf
// reads: the plugin (its Go part and its C shim), the CLI, and the tests
// and long runs. Each Var says what the variable does, its default and how
// its value is parsed; the parsers of the values the Go side reads are
// here too, so that every package reads a variable the same way.
//
// Two lists keep what a job sets apart from the tests' knobs: Vars (the
// plugin's, its C shim's and the CLI's variables) and TestVars (read by
// tests, test hosts and long runs only). docs/environment.md is generated
// from both (TestDocs keeps it in step); TestEveryVariableListed fails when
// a source file reads an NCCLBPF_* variable that neither lists, and
// TestConstantsNotLiterals when Go code spells a variable's name instead of
// using its constant.
package envconfig

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// The names of the variables a job or a user sets (Vars).
const (
	Policy        = "NCCLBPF_POLICY"
	PolicyConfig  = "NCCLBPF_POLICY_CONFIG"
	RulesFile     = "NCCLBPF_RULES_FILE"
	Strict        = "NCCLBPF_STRICT"
	RulesLog      = "NCCLBPF_RULES_LOG"
	Control       = "NCCLBPF_CONTROL"
	ControlDir    = "NCCLBPF_CONTROL_DIR"
	ReloadAllow   = "NCCLBPF_RELOAD_ALLOW"
	Watch         = "NCCLBPF_WATCH"
	WatchInterval = "NCCLBPF_WATCH_INTERVAL"
	GoMaxProcs    = "NCCLBPF_GOMAXPROCS"
	ProfPool      = "NCCLBPF_PROF_POOL"
	ProfReclaimMS = "NCCLBPF_PROF_RECLAIM_MS"
	ProfKchWaitMS = "NCCLBPF_PROF_KCH_WAIT_MS"
	EnvFile       = "NCCLBPF_ENV_FILE"
	NetPlugin     = "NCCLBPF_NET_PLUGIN"
	NetRequests   = "NCCLBPF_NET_REQUESTS"
	DecisionLog   = "NCCLBPF_DECISION_LOG"
	Latency       = "NCCLBPF_LATENCY"
	Store         = "NCCLBPF_STORE"
	Job           = "NCCLBPF_JOB"

	// TunerConfigFile is NCCL's example CSV tuner's variable, read by the
	// plugin in place of RulesFile when that is unset.
	TunerConfigFile = "NCCL_TUNER_CONFIG_FILE"
)

// The names of the tests' knobs (TestVars): read by the test suite, the C
// test hosts and the long runs, never by the plugin or the CLI.
const (
	ConformanceDir     = "NCCLBPF_CONFORMANCE_DIR"
	TestPython         = "NCCLBPF_TEST_PYTHON"
	RequireConformance = "NCCLBPF_REQUIRE_CONFORMANCE"
	NCCLHeaders        = "NCCLBPF_NCCL_HEADERS"
	RequireNCCLHeaders = "NCCLBPF_REQUIRE_NCCL_HEADERS"
	KernelVerifier     = "NCCLBPF_KERNEL_VERIFIER"
	PtrgenWorker       = "NCCLBPF_PTRGEN_WORKER"
	AgreeCmd           = "NCCLBPF_AGREE_CMD"
	HammerCalls        = "NCCLBPF_HAMMER_CALLS"
	HammerReloads      = "NCCLBPF_HAMMER_RELOADS"
	HammerThreads      = "NCCLBPF_HAMMER_THREADS"
	HammerSwaps        = "NCCLBPF_HAMMER_SWAPS"
	HammerSwapCalls    = "NCCLBPF_HAMMER_SWAP_CALLS"
	HammerProfEvery    = "NCCLBPF_HAMMER_PROF_EVERY"
	SyncRanks          = "NCCLBPF_SYNC_RANKS"
	HammerEmptyUS      = "NCCLBPF_HAMMER_EMPTY_US"
	HammerSeconds      = "NCCLBPF_HAMMER_SECONDS"
	TestArch           = "NCCLBPF_TEST_ARCH"
	NetBenchN          = "NCCLBPF_NET_BENCH_N"
	Aarch64CC          = "NCCLBPF_AARCH64_CC"
	Aarch64Sysroot     = "NCCLBPF_AARCH64_SYSROOT"
	QemuAarch64        = "NCCLBPF_QEMU_AARCH64"
	Arm64DiffN         = "NCCLBPF_ARM64_DIFF_N"
	HelperSock         = "NCCLBPF_HELPER_SOCK"
	DiffN              = "NCCLBPF_DIFF_N"
	DiffSeed           = "NCCLBPF_DIFF_SEED"
	TestLib            = "NCCLBPF_TEST_LIB"
	DemoRuns           = "NCCLBPF_DEMO_RUNS"
	Ranks8             = "NCCLBPF_RANKS8"
	StartupProcs       = "NCCLBPF_STARTUP_PROCS"
	StartupRounds      = "NCCLBPF_STARTUP_ROUNDS"
	StartupRoundsLong  = "NCCLBPF_STARTUP_ROUNDS_LONG"
	PtrgenN            = "NCCLBPF_PTRGEN_N"
	PtrgenSeed         = "NCCLBPF_PTRGEN_SEED"
	PtrgenPar          = "NCCLBPF_PTRGEN_PAR"
	PtrgenFindings     = "NCCLBPF_PTRGEN_FINDINGS"
	PtrgenCrashTest    = "NCCLBPF_PTRGEN_CRASHTEST"
	TwinPrograms       = "NCCLBPF_TWIN_PROGRAMS"
	TwinSeed           = "NCCLBPF_TWIN_SEED"
)

// Reader says which part of ncclbpf reads a variable.
type Reader string

// The readers.
const (
	// Plugin: the Go part of libncclbpf.so, once per process.
	Plugin Reader = "plugin"
	// Shim: the C part of libncclbpf.so, at the policy load or at each profiler init.
	Shim Reader = "plugin (C)"
	// PluginAndCLI: the plugin and the ncclbpf command.
	PluginAndCLI Reader = "plugin and CLI"
	// Tests: tests, test hosts and scripts/test-long.sh; no effect on a job.
	Tests Reader = "tests"
)

// Var describes one environment variable.
type Var struct {
	// Name is the variable, NCCLBPF_* (or NCCL_* for one of NCCL's the plugin honours).
	Name string
	// Reader says who reads it.
	Reader Reader
	// Default is what an unset variable means.
	Default string
	// Values says what it accepts and how a bad value is treated.
	Values string
	// Doc says what it does.
	Doc string
}

// Vars lists the variables a job or a user sets: the plugin's, its C
// shim's and the CLI's. docs/environment.md documents them for users.
var Vars = []Var{
	{Policy, Plugin, "`builtin:noop`",
		"a path to a `.bpf.o`, `builtin:NAME` (noop, size_aware, rules) or `none`",
		"the policy object the plugin loads at the first tuner init"},
	{PolicyConfig, Plugin, "none",
		"`name=value,...`: integers (decimal, `0x` hex, `K`/`M`/`G` suffix) or `true`/`false`; a bad list refuses the policy",
		"sets `volatile const` variables of the policy by name"},
	{RulesFile, Plugin, "none",
		"a file in the format of NCCL's example CSV tuner; a bad file refuses the policy",
		"fills the policy's rule table (`builtin:rules`); ignored, with a note in NCCL's log, by a policy that has no rule table"},
	{TunerConfigFile, Plugin, "none",
		"as `NCCLBPF_RULES_FILE`",
		"NCCL's example CSV tuner's variable: the rules file when `NCCLBPF_RULES_FILE` is unset, so that a job moving from that tuner keeps its setting"},
	{Strict, Plugin, "`0` (a policy that does not load leaves NCCL's defaults)",
		"`1`/`true`/`yes`/`on` or `0`/`false`/`no`/`off`; any other value is an error, treated as strict",
		"when the policy (or its configuration or rules file) does not load, the library's init returns an error: " +
			"NCCL fails the communicator's init at the tuner (docs/operators-guide.md, \"Failures\")"},
	{RulesLog, Plugin, "`0`",
		"`1`/`true`/`yes`/`on` or `0`/`false`/`no`/`off`; any other value is off, with a warning",
		"the rules policy logs, through NCCL's INFO log (bpf_printk, rate-limited), which rule matched each call"},
	{Control, Plugin, "`on`",
		"`on` (`1`, `true`, `yes`, `rw`), `off` (`0`, `false`, `no`, `none`), `ro` (`readonly`, `read-only`, `observe`); anything else is `ro`, with a warning",
		"whether the process serves a control socket, and whether it may change anything"},
	{ControlDir, PluginAndCLI, "`$XDG_RUNTIME_DIR/ncclbpf`, else `/tmp/ncclbpf-$UID`",
		"a directory",
		"where the control sockets live; give the CLI the same one (or `--dir`)"},
	{ReloadAllow, Plugin, "any verified object",
		"`D1,D2,...`: SHA-256 digests; entries starting with `/` or `.` are files of digests, one per line, `#` comments; a malformed list refuses every reload",
		"the only objects a reload (control socket or file watch) may load; the first load is not subject to it"},
	{Watch, Plugin, "`off`",
		"`1`/`0`, `on`/`off`, `true`/`false`, `yes`/`no`; anything else is off, with a warning",
		"reloads the policy file named by NCCLBPF_POLICY when it changes"},
	{Store, Plugin, "unset (agreement and check reach the processes of this host through their control sockets)",
		"`tcpstore` (torchrun's store at MASTER_ADDR:MASTER_PORT) or `tcpstore://HOST:PORT`",
		"the job's own store: every process registers there and serves control requests, so that `ncclbpf agree`, `check` (and `--store`) reach every rank of a multi-node job"},
	{Job, Plugin, "the store's default job", "a name", "the key prefix under which the job's processes register in the store (`ncclbpf/NAME/`): one per job"},
	{EnvFile, Shim, "unset (the env plugin serves nothing: NCCL reads its environment as usual)",
		"a file in the syntax of NCCL's `nccl.conf` (`NAME=VALUE` lines, `#` comments); unreadable: one warning, then as unset",
		"the values the library's env plugin (`NCCL_ENV_PLUGIN`) serves for NCCL's parameters; those not in the file come from the environment; the values served are part of the process digest (`ncclbpf check`)"},
	{NetPlugin, Plugin, "unset (the net side fails its init, NCCL uses its next transport)",
		"a name resolved as NCCL resolves `NCCL_NET_PLUGIN` (the name, then `libnccl-net-NAME.so`) or a path",
		"the net plugin the library's net side wraps (docs/nccl-net-abi.md)"},
	{NetRequests, Plugin, "`16384`", "a power of two from 64 to 2^20 (anything else: the default); read once, at the first net init",
		"entries of each calling thread's table of the net side's outstanding requests"},
	{WatchInterval, Plugin, "`1s`",
		"a Go duration within 10ms..24h; anything else is 1s, with a warning",
		"how often the watched policy file is checked"},
	{GoMaxProcs, Plugin, "`2`",
		"a number within 1..64; anything else is 2, with a warning",
		"caps the threads running the plugin's Go code at once"},
	{DecisionLog, Shim, "`off`",
		"`on` (1000 lines a second), `off`, or a number of lines a second (1..1000000); anything else is off, with a warning on stderr",
		"one NCCL INFO line (NCCL_TUNING) per tuner decision, rate-limited over the process; lines over the rate are counted and reported"},
	{Latency, Shim, "`off`",
		"`on` (`1`, `yes`, `true`) or `off`",
		"asks NCCL for collective profiler events even when no profiler program needs them, so that the latency histograms (`ncclbpf exporter`, `ncclbpf report`) fill whatever the policy"},
	{ProfPool, Shim, "`4096`",
		"a number, clamped to 16..4194304",
		"profiler events per communicator held at once"},
	{ProfReclaimMS, Shim, "`1000`",
		"milliseconds, clamped to 1..3600000",
		"age at which a stuck profiler task is completed by the sweep"},
	{ProfKchWaitMS, Shim, "`5000`",
		"milliseconds, clamped to 1..3600000",
		"how long a profiler context waits for kernel-channel events before it stops waiting for them"},
}

// TestVars lists the tests' knobs (Reader Tests): they change what a test
// or a long run does and have no effect on a job.
var TestVars = []Var{
	{TestPython, Tests, "`python3`", "a Python with PyTorch", "runs the real TCPStore server the store tests talk to"},
	{ConformanceDir, Tests, "`../shared/conformance/bpf_conformance`",
		"a directory of `.data` files; when set, a missing corpus fails the tests",
		"the bpf_conformance corpus (outside the repository; without it the corpus tests skip, one line each)"},
	{RequireConformance, Tests, "`0` (CI's `.ci/run` sets `1`)",
		"`1`/`0`, `on`/`off`, `true`/`false`, `yes`/`no`; anything else requires it",
		"a missing bpf_conformance corpus fails the corpus tests instead of skipping them"},
	{NCCLHeaders, Tests, "`../shared/nccl-headers`",
		"a directory of NCCL releases, each `<release>/src/include/plugin`; when set, a folder without releases fails the test",
		"NCCL's own plugin headers, which the layout test (internal/ncclabi) compiles and compares with ncclbpf's description of every ABI version"},
	{RequireNCCLHeaders, Tests, "`0` (CI's `.ci/run` sets `1`)",
		"`1`/`0`, `on`/`off`, `true`/`false`, `yes`/`no`; anything else requires them",
		"a missing NCCL header folder fails the layout test instead of skipping it"},
	{KernelVerifier, Tests, "unset",
		"`require`: a kernel that cannot load programs fails the test instead of skipping it",
		"the comparison with the Linux verifier"},
	{PtrgenWorker, Tests, "unset",
		"`seed:from:to`, set by the test itself",
		"runs one worker of the pointer-soundness generator"},
	{AgreeCmd, Tests, "unset",
		"a command line",
		"the `ncclbpf agree` command the profiler test host runs"},
	{HammerCalls, Tests, "`200000`", "a number", "tuner calls per thread of the reload hammers"},
	{HammerReloads, Tests, "`300`", "a number", "reloads of the reload hammer"},
	{HammerThreads, Tests, "`8`", "a number", "calling threads of the reload hammers"},
	{HammerSwaps, Tests, "`0`", "a number", "slot swaps of the swap hammer, in place of reloads (0: reloads)"},
	{HammerSwapCalls, Tests, "`1000000`", "a number", "tuner calls of the long swap hammer (scripts/test-long.sh)"},
	{HammerProfEvery, Tests, "`1`", "a number", "profiler events per tuner call in the reload hammer"},
	{SyncRanks, Tests, "`4`", "a number", "ranks of the at-seq reload hammer"},
	{HammerEmptyUS, Tests, "`0`", "microseconds", "empties the tuner slot that long before each publish: a deliberate bug the mutation test expects the hammer to catch"},
	{HammerSeconds, Tests, "1.5s of hammering", "seconds", "how long the native map hammer runs"},
	{NetBenchN, Tests, "`20000`", "a number", "isend+test pairs per round of the net wrapper's cost test"},
	{TestArch, Tests, "this machine's", "`arm64`", "the plugin tests cross-build the library and hosts for linux/arm64 and run them under qemu-aarch64 (set by internal/cross)"},
	{Aarch64CC, Tests, "`aarch64-linux-gnu-gcc`", "a C compiler", "the cross compiler of the arm64 builds"},
	{Aarch64Sysroot, Tests, "`/usr/aarch64-linux-gnu`", "a directory", "the arm64 libraries qemu-aarch64 runs the cross-built programs with"},
	{QemuAarch64, Tests, "`qemu-aarch64`", "a program", "the emulator of the arm64 tests"},
	{Arm64DiffN, Tests, "`3000`", "a number", "random programs the interpreter-vs-arm64-JIT differential test checks under qemu"},
	{HelperSock, Tests, "unset", "a socket path, set by the test itself", "the socket the control test's helper process connects to"},
	{DiffN, Tests, "the seed programs only", "a number", "random programs the JIT-interpreter differential test checks"},
	{DiffSeed, Tests, "`0`", "a number", "the first seed of the differential test"},
	{DemoRuns, Tests, "`3`", "a number", "runs of scripts/demo.sh under CPU load in TestDemoUnderLoad (scripts/test-long.sh: 20)"},
	{TestLib, Tests, "the library built by the test", "a path to a `libncclbpf.so` built with `-tags ncclbpf_testing`", "tests another build of the plugin"},
	{Ranks8, Tests, "unset", "`1`", "adds 4- and 8-rank cases to the profiler rank-consistency test"},
	{StartupProcs, Tests, "`64`", "a number", "processes the control startup race test starts"},
	{StartupRounds, Tests, "`3`", "a number", "rounds of the control startup race test"},
	{StartupRoundsLong, Tests, "`30`", "a number", "rounds of that test in scripts/test-long.sh"},
	{PtrgenN, Tests, "the default count of the test", "a number", "random programs the pointer-soundness test checks"},
	{PtrgenSeed, Tests, "a fixed seed", "a number", "the seed of the pointer-soundness generator"},
	{TwinPrograms, Tests, "10000 (2000 with -short)", "a number", "random tuner programs the two-run oracle (rank uniformity) checks"},
	{TwinSeed, Tests, "1", "a number", "the seed of the two-run oracle's generator"},
	{PtrgenPar, Tests, "`1`", "a number", "pointer-soundness workers run at a time"},
	{PtrgenFindings, Tests, "unset", "a file", "where the pointer-soundness test writes what it found"},
	{PtrgenCrashTest, Tests, "unset", "any value, set by the test itself", "makes a worker crash, to test that crashes are reported"},
}

// Lookup returns the description of the variable name, from Vars or
// TestVars, or nil.
func Lookup(name string) *Var {
	for _, list := range [][]Var{Vars, TestVars} {
		for i := range list {
			if list[i].Name == name {
				return &list[i]
			}
		}
	}
	return nil
}

// Markdown renders Vars as the table of docs/environment.md.
func Markdown() string {
	var b strings.Builder
	b.WriteString("# Environment variables\n\n")
	b.WriteString("Generated from `internal/envconfig/envconfig.go` (`go test ./internal/envconfig -run TestDocs -update`); edit that file, not this one.\n\n")
	b.WriteString("The variables a job or a user sets: the plugin's (in the job's environment) and the CLI's.\n\n")
	table := func(vars []Var) {
		b.WriteString("| variable | read by | default | values | what it does |\n|---|---|---|---|---|\n")
		for _, v := range vars {
			fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s |\n", v.Name, v.Reader, v.Default, v.Values, v.Doc)
		}
	}
	table(Vars)
	b.WriteString("\n## For the project's tests only\n\n")
	b.WriteString("Read by the test suite and the long runs (scripts/test-long.sh), never by the plugin or the CLI.\n\n")
	table(TestVars)
	return b.String()
}

// ParseSwitch reads an on/off variable: a value it does not know is off,
// with a warning.
func ParseSwitch(name, v string) (on bool, warn string) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "1", "on", "true", "yes":
		return true, ""
	case "", "0", "off", "false", "no":
		return false, ""
	}
	return false, fmt.Sprintf("ncclbpf: %s=%q is not one of 1/0, on/off, true/false, yes/no; off", name, v)
}

// ParseStrict reads NCCLBPF_STRICT: 1/true/yes/on or 0/false/no/off
// (any case); unset or empty is off. Any other value is an error, and
// strict is then true: whoever set the variable wanted the job to stop
// rather than run without its policy.
func ParseStrict(v string) (strict bool, err error) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "1", "true", "yes", "on":
		return true, nil
	case "", "0", "false", "no", "off":
		return false, nil
	}
	return true, fmt.Errorf("%s=%q is not one of 1/true/yes/on or 0/false/no/off", Strict, v)
}

// ParseWatchInterval reads NCCLBPF_WATCH_INTERVAL: a Go duration within
// 10ms..24h; anything else gives the default of 1s and a warning.
func ParseWatchInterval(v string) (time.Duration, string) {
	if strings.TrimSpace(v) == "" {
		return time.Second, ""
	}
	d, err := time.ParseDuration(strings.TrimSpace(v))
	if err != nil || d < 10*time.Millisecond || d > 24*time.Hour {
		return time.Second, fmt.Sprintf("ncclbpf: %s=%q is not a duration within 10ms..24h (such as 500ms, 2s); checking every 1s",
			WatchInterval, v)
	}
	return d, ""
}

// DefaultGoMaxProcs is enough for loading a policy while the control
// server answers.
const DefaultGoMaxProcs = 2

// ParseGoMaxProcs reads NCCLBPF_GOMAXPROCS: a number within 1..64;
// anything else gives DefaultGoMaxProcs and a warning.
func ParseGoMaxProcs(v string) (int, string) {
	v = strings.TrimSpace(v)
	if v == "" {
		return DefaultGoMaxProcs, ""
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > 64 {
		return DefaultGoMaxProcs, fmt.Sprintf("ncclbpf: %s=%q is not a number within 1..64; using %d", GoMaxProcs, v, DefaultGoMaxProcs)
	}
	return n, ""
}

// ControlMode is the control socket's mode (NCCLBPF_CONTROL).
type ControlMode int

// The modes.
const (
	// ControlOn: observe, reload, write maps.
	ControlOn ControlMode = iota
	// ControlOff: no socket.
	ControlOff
	// ControlReadOnly: observe only (info, stats, maps, map dump).
	ControlReadOnly
)

// String returns "on", "off" or "read-only".
func (m ControlMode) String() string {
	return [...]string{"on", "off", "read-only"}[m]
}

// ParseControl reads NCCLBPF_CONTROL. A value it does not know gives
// read-only (the mode that changes nothing in the job) and a warning.
func ParseControl(v string) (ControlMode, string) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "", "1", "on", "true", "yes", "rw":
		return ControlOn, ""
	case "0", "off", "false", "no", "none":
		return ControlOff, ""
	case "ro", "readonly", "read-only", "observe":
		return ControlReadOnly, ""
	}
	return ControlReadOnly, fmt.Sprintf("ncclbpf: %s=%q is not one of on, off, ro (1/0, true/false, yes/no, readonly); serving the control socket read-only",
		Control, v)
}
