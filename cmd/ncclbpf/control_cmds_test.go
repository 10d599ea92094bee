package main

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ncclbpf/ncclbpf/control"
	"github.com/ncclbpf/ncclbpf/maps"
)

// fakeProcess serves a control socket with canned answers and records the
// requests it got.
type fakeProcess struct {
	mu    sync.Mutex
	reqs  []control.Payload
	comms []control.CommInfo // what info reports
	env   uint64             // the env plugin's digest the ledger reports
}

func (f *fakeProcess) handle(req control.Payload) *control.Response {
	f.mu.Lock()
	f.reqs = append(f.reqs, req)
	comms, env := f.comms, f.env
	f.mu.Unlock()
	info := control.Info{PID: os.Getpid(), Started: time.Now().Add(-time.Minute), Running: true, Policy: "/p/a.bpf.o",
		SHA256: strings.Repeat("ab", 32), LoadedAt: time.Now(), Attached: "tuner=a", Comms: comms}
	switch req := req.(type) {
	case *control.InfoQuery:
		return &control.Response{Info: &info}
	case *control.Cancel:
		return &control.Response{Reload: &control.ReloadResult{Policy: info.Policy, SHA256: info.SHA256}}
	case *control.StatsQuery:
		return &control.Response{Stats: &control.Stats{Info: info, Tuner: control.TunerStats{Calls: 7, PolicyCalls: 7,
			Applied: 5, Rejected: 2, SeqMax: 100, CommsLive: 1}, Profiler: control.ProfilerStats{Calls: map[string]uint64{}}}}
	case *control.MapList:
		return &control.Response{Maps: []control.MapInfo{{Name: "hits", Type: "array", KeySize: 4, ValueSize: 8, MaxEntries: 2}}}
	case *control.MapDump:
		// json.Marshal escapes <, > and & in strings: --json must not.
		d, _ := json.Marshal(maps.MapDump{Name: "hits<&>", Type: "array", KeySize: 4, ValueSize: 8, MaxEntries: 2,
			Entries: []maps.Entry{{Key: 0, Value: 41}, {Key: uint64(1), Value: maps.Struct{{Name: "big", Value: uint64(1<<60 + 1)},
				{Name: "two_m", Value: uint64(2000000)}, {Name: "neg", Value: int64(-5)}}}}})
		return &control.Response{Dump: d}
	case *control.MapUpdate, *control.MapLookup, *control.MapDelete:
		var args []string
		switch r := req.(type) {
		case *control.MapUpdate:
			args = r.Args
		case *control.MapLookup:
			args = r.Args
		case *control.MapDelete:
			args = r.Args
		}
		kv, err := maps.ParseKeyValue(maps.Spec{Name: "hits", Type: maps.Array, KeySize: 4, ValueSize: 8, MaxEntries: 2}, args)
		if err != nil {
			return &control.Response{Error: err.Error()}
		}
		if req.Op() == control.OpMapLookup {
			d, _ := json.Marshal(maps.MapDump{Name: "hits", Type: "array", KeySize: 4, ValueSize: 8, MaxEntries: 2,
				Entries: []maps.Entry{{Key: uint64(kv.Key[0]), Value: uint64(1<<60 + 1)}}})
			return &control.Response{Dump: d}
		}
		resp := &control.Response{Entries: []control.KV{{Key: hex.EncodeToString(kv.Key), Value: hex.EncodeToString(kv.Value)}}}
		if req.Op() == control.OpMapUpdate { // the entry as written, decoded (as the plugin answers)
			resp.Dump, _ = json.Marshal(maps.MapDump{Name: "hits", Type: "array", KeySize: 4, ValueSize: 8, MaxEntries: 2,
				Entries: []maps.Entry{{Key: uint64(kv.Key[0]), Value: int64(binary.LittleEndian.Uint64(kv.Value))}}})
		}
		return resp
	case *control.DecisionsQuery:
		return &control.Response{Decisions: []control.CommDecisions{{CommDigest: control.CommDigest{CommID: 0x5e5e, NRanks: 2}}}}
	case *control.LedgerQuery:
		return &control.Response{Ledger: []control.LedgerView{{CommID: 0x5e5e, NRanks: 2, Through: -1, EnvDigest: env}}}
	case *control.Prepare:
		return &control.Response{Tx: &control.TxResult{Tx: req.Tx, State: control.TxPrepared, AtSeq: deref(req.AtSeq)}}
	case *control.Commit:
		return &control.Response{Tx: &control.TxResult{Tx: req.Tx, State: control.TxCommitted}}
	case *control.Reload:
		return &control.Response{Reload: &control.ReloadResult{Policy: req.Name, SHA256: strings.Repeat("cd", 32),
			Attached: "tuner=reload_b", Reused: []string{"hits"}, Pending: req.AtSeq != nil, AtSeq: deref(req.AtSeq)}}
	case *control.Rollback:
		return &control.Response{Reload: &control.ReloadResult{Policy: "/p/before.bpf.o", SHA256: strings.Repeat("cd", 32),
			Attached: "tuner=reload_b", Reused: []string{"hits"}, Pending: req.AtSeq != nil, AtSeq: deref(req.AtSeq)}}
	}
	return &control.Response{Error: "unexpected"}
}

func deref(p *uint64) uint64 {
	if p == nil {
		return 0
	}
	return *p
}

func startFake(t *testing.T) (string, *fakeProcess) {
	t.Helper()
	dir := t.TempDir()
	f := &fakeProcess{}
	s, err := control.Listen(dir, os.Getpid(), f.handle)
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve()
	t.Cleanup(func() { s.Close() })
	return dir, f
}

func ctlCLI(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := run(args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestPsStatsMap(t *testing.T) {
	dir, _ := startFake(t)
	// A stale socket beside the live one is skipped.
	ln, _ := net.ListenUnix("unix", &net.UnixAddr{Name: control.SocketPath(dir, 1), Net: "unix"})
	ln.SetUnlinkOnClose(false)
	ln.Close()
	pid := itoa(os.Getpid())
	code, out, errs := ctlCLI("ps", "--dir", dir)
	if code != 0 || !strings.Contains(out, pid) || !strings.Contains(out, "/p/a.bpf.o") || strings.Count(out, "\n") != 2 {
		t.Fatalf("ps: %d %q %q", code, out, errs)
	}
	code, out, _ = ctlCLI("stats", "--dir", dir, pid)
	if code != 0 || !strings.Contains(out, "7 calls, 7 ran the policy, 5 applied, 2 rejected") {
		t.Fatalf("stats: %d %q", code, out)
	}
	code, out, _ = ctlCLI("map", "list", "--dir", dir, pid)
	if code != 0 || !strings.Contains(out, "hits") {
		t.Fatalf("map list: %d %q", code, out)
	}
	code, out, _ = ctlCLI("map", "dump", "--dir", dir, pid, "hits")
	if code != 0 || !strings.Contains(out, "  0: 41\n  1: {big: 1152921504606846977, two_m: 2000000, neg: -5}\n") {
		t.Fatalf("map dump: %d %q", code, out)
	}
	code, out, _ = ctlCLI("map", "dump", "--json", "--dir", dir, pid, "hits")
	if code != 0 || !strings.Contains(out, `{"key":1,"value":{"big":1152921504606846977,"two_m":2000000,"neg":-5}}`) {
		t.Fatalf("map dump --json: %d %q", code, out)
	}
	code, out, _ = ctlCLI("map", "update", "--dir", dir, pid, "hits", "1", "42")
	if code != 0 || out != "pid "+pid+": hits[1] = 42\n" {
		t.Fatalf("map update: %d %q", code, out)
	}
	code, out, _ = ctlCLI("map", "update", "--dir", dir, pid, "hits", "--", "key", "hex", "01", "00", "00", "00", "value", "-1")
	if code != 0 || out != "pid "+pid+": hits[1] = -1\n" {
		t.Fatalf("map update key hex: %d %q", code, out)
	}
	code, out, _ = ctlCLI("map", "lookup", "--dir", dir, pid, "hits", "key", "1", "0", "0", "0")
	if code != 0 || out != "  1: 1152921504606846977\n" {
		t.Fatalf("map lookup: %d %q", code, out)
	}
	code, out, _ = ctlCLI("map", "delete", "--dir", dir, pid, "hits", "1")
	if code != 0 || out != "pid "+pid+": hits[01000000] deleted\n" {
		t.Fatalf("map delete: %d %q", code, out)
	}
	code, _, errs = ctlCLI("map", "update", "--dir", dir, pid, "hits", "9", "42")
	if code == 0 || !strings.Contains(errs, "index 9 out of range: array map hits has 2 entries") {
		t.Fatalf("index 9: %d %q", code, errs)
	}
	code, _, errs = ctlCLI("map", "update", "--dir", dir, pid, "hits", "zz", "42")
	if code == 0 || !strings.Contains(errs, `"zz" is not an integer`) {
		t.Fatalf("bad key: %d %q", code, errs)
	}
}

// map update reads what follows PID as arguments, so that -1 is a value and
// not a flag, and sends the words to the process, which reads them with the
// map's BTF types (the fake reads them with maps.ParseKeyValue, as the
// plugin does). (Mutation: parsing map update's flags interspersed reads -1
// as an unknown shorthand flag.)
func TestMapUpdateValues(t *testing.T) {
	dir, f := startFake(t)
	pid := itoa(os.Getpid())
	for _, tc := range []struct {
		args       []string
		key, value string
	}{
		{[]string{"hits", "1", "-1"}, "1", "-1"},
		{[]string{"hits", "--", "1", "-2"}, "1", "-2"},
		{[]string{"hits", "1", "2000000"}, "1", "2000000"},
		{[]string{"hits", "0x1", "1152921504606846977"}, "1", "1152921504606846977"},
		{[]string{"hits", "key", "hex", "01", "00", "00", "00", "value", "hex", "2a", "00", "00", "00", "00", "00", "00", "00"}, "1", "42"},
	} {
		code, out, errs := ctlCLI(append([]string{"map", "update", "--dir", dir, "--force", pid}, tc.args...)...)
		last, _ := f.reqs[len(f.reqs)-1].(*control.MapUpdate)
		words := tc.args[1:]
		if words[0] == "--" {
			words = words[1:]
		}
		if code != 0 || last == nil || strings.Join(last.Args, " ") != strings.Join(words, " ") || !last.Force ||
			!strings.Contains(out, "hits["+tc.key+"] = "+tc.value) {
			t.Errorf("map update %q: exit %d, %q %q; sent %+v", tc.args, code, out, errs, f.reqs[len(f.reqs)-1])
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"hits", "9", "1"}, "index 9 out of range"},
		{[]string{"hits", "1", "2", "--force"}, "flags go before PID"},
		{[]string{"hits", "1"}, "map update takes PID MAP KEY VALUE"},
	} {
		code, _, errs := ctlCLI(append([]string{"map", "update", "--dir", dir, pid}, tc.args...)...)
		if code == 0 || !strings.Contains(errs, tc.want) {
			t.Errorf("map update %q: exit %d, %q; want %q", tc.args, code, errs, tc.want)
		}
	}
}

func TestControlErrors(t *testing.T) {
	dir, _ := startFake(t)
	ln, _ := net.ListenUnix("unix", &net.UnixAddr{Name: control.SocketPath(dir, 7), Net: "unix"})
	ln.SetUnlinkOnClose(false)
	ln.Close()
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"stats", "--dir", dir, "424242"}, exitFailure, "no control socket"},
		{[]string{"stats", "--dir", dir, "7"}, exitFailure, "the process is gone"},
		{[]string{"stats", "--dir", dir, "abc"}, exitUsage, "not a process id"},
		{[]string{"stats", "--dir", dir}, exitUsage, "want one PID"},
		{[]string{"reload", "--dir", dir, itoa(os.Getpid())}, exitUsage, "want PID|--all and OBJ"},
		{[]string{"map", "frob", "--dir", dir, itoa(os.Getpid())}, exitUsage, "unknown map verb"},
	} {
		code, _, errs := ctlCLI(tc.args...)
		if code != tc.code || !strings.Contains(errs, tc.want) {
			t.Errorf("%v: exit %d, %q; want %d and %q", tc.args, code, errs, tc.code, tc.want)
		}
	}
}

func TestReloadVerifiesLocallyFirst(t *testing.T) {
	dir, f := startFake(t)
	pid := itoa(os.Getpid())
	code, _, errs := ctlCLI("reload", "--dir", dir, pid, filepath.Join("..", "..", "plugin", "e2e", "testdata", "unsafe_oob.bpf.o"))
	if code != exitFailure || !strings.Contains(errs, "rejected") || !strings.Contains(errs, "nothing was sent") {
		t.Fatalf("bad object: %d %q", code, errs)
	}
	if len(f.reqs) != 0 {
		t.Fatalf("a request was sent for an object that fails verification: %+v", f.reqs)
	}
	code, out, errs := ctlCLI("reload", "--dir", dir, "--all", "--at-seq", "+50", filepath.Join("..", "..", "testhost", "reload_b.bpf.o"))
	if code != 0 || !strings.Contains(out, "armed: communicators switch at call 150") {
		t.Fatalf("reload --all --at-seq +50: %d %q %q", code, out, errs)
	}
	// Two-phase: a prepare with the object, then the commit of the same switch.
	prep, _ := f.reqs[len(f.reqs)-2].(*control.Prepare)
	last, _ := f.reqs[len(f.reqs)-1].(*control.Commit)
	if prep == nil || len(prep.Object) == 0 || prep.AtSeq == nil || *prep.AtSeq != 150 ||
		last == nil || last.Tx != prep.Tx || prep.Tx == "" {
		t.Fatalf("sent %+v then %+v", f.reqs[len(f.reqs)-2], f.reqs[len(f.reqs)-1])
	}
	code, out, _ = ctlCLI("reload", "--dir", dir, "--rollback", pid)
	if code != 0 || f.reqs[len(f.reqs)-1].Op() != control.OpRollback || !strings.Contains(out, "tuner=reload_b") {
		t.Fatalf("rollback: %d %q", code, out)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// A process that accepts and never answers (a forked child that kept the
// socket, a wedged process) costs ps its --timeout, once, and makes reload
// --all refuse rather than reload the others; --expect counts processes;
// --cancel is sent. (Mutation: querying the sockets one after another with
// the 2-minute call timeout, as before, makes ps take minutes here.)
func TestControlCommandsWithAHungProcess(t *testing.T) {
	dir, f := startFake(t)
	obj := filepath.Join("..", "..", "testhost", "reload_b.bpf.o")
	code, _, errs := ctlCLI("reload", "--dir", dir, "--all", "--expect", "2", obj)
	if code != exitFailure || !strings.Contains(errs, "--expect 2 (nothing was sent)") {
		t.Fatalf("--expect 2 with one process: %d %q", code, errs)
	}
	code, out, errs := ctlCLI("reload", "--dir", dir, "--cancel", "--all")
	if code != 0 || !strings.Contains(out, "armed reload withdrawn") || f.reqs[len(f.reqs)-1].Op() != control.OpCancel {
		t.Fatalf("--cancel: %d %q %q", code, out, errs)
	}
	var mu sync.Mutex
	var hung []net.Conn
	defer func() {
		mu.Lock()
		for _, c := range hung {
			c.Close()
		}
		mu.Unlock()
	}()
	for _, pid := range []int{77, 78, 79} {
		ln, err := net.Listen("unix", control.SocketPath(dir, pid))
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				mu.Lock()
				hung = append(hung, c) // never answers
				mu.Unlock()
			}
		}()
	}
	t0 := time.Now()
	code, out, errs = ctlCLI("ps", "--dir", dir, "--timeout", "1s", "-v")
	if d := time.Since(t0); d > 3*time.Second {
		t.Errorf("ps took %v with three hung processes and --timeout 1s", d)
	}
	if code != 0 || !strings.Contains(out, itoa(os.Getpid())) || strings.Count(errs, "timeout") != 3 {
		t.Fatalf("ps: %d %q %q", code, out, errs)
	}
	code, _, errs = ctlCLI("reload", "--dir", dir, "--all", obj)
	if last := f.reqs[len(f.reqs)-1]; code != exitFailure || !strings.Contains(errs, "not every process") || last.Op() == control.OpReload {
		t.Fatalf("reload --all with hung processes: %d %q (last request %s)", code, errs, last.Op())
	}
}

// reload --all refuses when a single-node communicator has ranks that no
// answering process reports (their sockets are missing), and goes ahead
// once every rank is there. (Mutation: dropping the communicator check of
// allTargets reloads the one process here.)
func TestReloadAllRequiresEveryLocalRank(t *testing.T) {
	dir, f := startFake(t)
	obj := filepath.Join("..", "..", "testhost", "reload_b.bpf.o")
	f.mu.Lock()
	f.comms = []control.CommInfo{{ID: 0xabc, Ranks: 2, Nodes: 1, Seq: 10}, {ID: 0xdef, Ranks: 16, Nodes: 2}}
	f.mu.Unlock()
	code, _, errs := ctlCLI("reload", "--dir", dir, "--all", obj)
	if code != exitFailure || !strings.Contains(errs, "communicator 0xabc: 1 of its 2 ranks answered") || strings.Contains(errs, "0xdef") {
		t.Fatalf("reload --all with a rank missing: %d %q", code, errs)
	}
	for _, r := range f.reqs {
		if r.Op() == control.OpReload {
			t.Fatal("a reload was sent")
		}
	}
	f.mu.Lock()
	f.comms = []control.CommInfo{{ID: 0xabc, Ranks: 1, Nodes: 1}}
	f.mu.Unlock()
	if code, out, errs := ctlCLI("reload", "--dir", dir, "--all", "--expect", "1", obj); code != 0 || !strings.Contains(out, "tuner=reload_b") {
		t.Fatalf("reload --all, every rank there: %d %q %q", code, out, errs)
	}
}

// TestPsWrongDir: ps pointed at a missing directory fails and says where
// the processes' directory is; at a directory without sockets it says so
// on stderr (the table stays empty).
func TestPsWrongDir(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nope")
	code, out, errs := ctlCLI("ps", "--dir", missing)
	if code != 1 || out != "" || !strings.Contains(errs, "control directory "+missing+" does not exist") || !strings.Contains(errs, "--dir") {
		t.Errorf("ps --dir missing: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	code, _, errs = ctlCLI("reload", "--dir", missing, "--all", "../../policies/noop.bpf.o")
	if code != 1 || !strings.Contains(errs, "does not exist") {
		t.Errorf("reload --all --dir missing: exit %d, stderr %q", code, errs)
	}
	empty := t.TempDir()
	code, out, errs = ctlCLI("ps", "--dir", empty)
	if code != 0 || strings.Count(out, "\n") != 1 || !strings.Contains(errs, "no control socket in "+empty) {
		t.Errorf("ps --dir empty: exit %d, stdout %q, stderr %q", code, out, errs)
	}
}

// TestCheckNamesEnvironmentDifference: two processes of one communicator
// that NCCL's env plugin served different NCCL_* values are named, with
// their digests, and check fails; alike, nothing is said of it.
func TestCheckNamesEnvironmentDifference(t *testing.T) {
	dir := t.TempDir()
	pids := []int{os.Getpid(), os.Getppid()}
	fakes := make([]*fakeProcess, 2)
	for i, pid := range pids {
		fakes[i] = &fakeProcess{env: 0x1111}
		s, err := control.Listen(dir, pid, fakes[i].handle)
		if err != nil {
			t.Fatal(err)
		}
		go s.Serve()
		t.Cleanup(func() { s.Close() })
	}
	code, out, errs := ctlCLI("check", "--dir", dir)
	if strings.Contains(out, "ENVIRONMENT DIFFERS") {
		t.Fatalf("same environments reported as different: %d %q %q", code, out, errs)
	}
	fakes[1].mu.Lock()
	fakes[1].env = 0x2222
	fakes[1].mu.Unlock()
	code, out, errs = ctlCLI("check", "--dir", dir)
	want := fmt.Sprintf("pid %d (environment 0000000000001111); pid %d (environment 0000000000002222)", pids[0], pids[1])
	if pids[1] < pids[0] {
		want = fmt.Sprintf("pid %d (environment 0000000000002222); pid %d (environment 0000000000001111)", pids[1], pids[0])
	}
	if code != 1 || !strings.Contains(out, "ENVIRONMENT DIFFERS") || !strings.Contains(out, want) {
		t.Fatalf("check with two environments: exit %d, want 1 naming %q\n%s%s", code, want, out, errs)
	}
	code, out, _ = ctlCLI("check", "--json", "--dir", dir)
	if code != 1 || !strings.Contains(out, `"environment_differs"`) {
		t.Fatalf("check --json: exit %d\n%s", code, out)
	}
}
