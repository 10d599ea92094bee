package e2e

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ncclbpf/ncclbpf/hook"
	"github.com/ncclbpf/ncclbpf/internal/buildrecipe"
	"github.com/ncclbpf/ncclbpf/internal/envconfig"
	"github.com/ncclbpf/ncclbpf/internal/ncclabi/ctxfill"
)

// The net wrapper is tested the way NCCL's proxy thread drives it:
// testhost/net_host.c runs two processes that connect to each other through
// libncclbpf.so's ncclNetPlugin_vN, which passes every call to
// testhost/tcpnet.c (a small TCP net plugin), and checks every byte.

var (
	netOnce sync.Once
	netErr  error
	netArt  struct {
		host, tcp11, tcp10 string
		old                map[int]string // tcpnet exporting only ncclNetPlugin_vN, N = 6..9 and 12
		broken             string         // tcpnet v6 without test
	}
)

func netArtifacts(t *testing.T) {
	t.Helper()
	artifacts(t)
	netOnce.Do(func() {
		netArt.host = filepath.Join(art.dir, "net_host")
		netArt.tcp11 = filepath.Join(art.dir, "libnccl-net-tcpnet.so")
		netArt.tcp10 = filepath.Join(art.dir, "libtcpnet10.so")
		steps := []buildrecipe.Step{
			{Target: "net-host", Out: netArt.host},
			{Target: "tcpnet", Out: netArt.tcp11},
			{Target: "tcpnet", Out: netArt.tcp10, Flags: []string{"-DTCPNET_V10"}},
		}
		netArt.old = map[int]string{}
		for _, v := range []int{6, 7, 8, 9, 12} {
			netArt.old[v] = filepath.Join(art.dir, fmt.Sprintf("libtcpnet%d.so", v))
			steps = append(steps, buildrecipe.Step{Target: "tcpnet", Out: netArt.old[v], Flags: []string{fmt.Sprintf("-DTCPNET_ABI=%d", v)}})
		}
		netArt.broken = filepath.Join(art.dir, "libtcpnet6-notest.so")
		steps = append(steps, buildrecipe.Step{Target: "tcpnet", Out: netArt.broken, Flags: []string{"-DTCPNET_ABI=6", "-DTCPNET_NO_TEST"}})
		netErr = buildSteps(repoRoot(t), steps)
	})
	if netErr != nil {
		t.Fatalf("building the net host and plugin: %v", netErr)
	}
}

// netHost runs net_host with args and env and returns its "rN key value"
// lines by rank, and its stderr.
func netHost(t *testing.T, env []string, args ...string) ([2]map[string]string, string) {
	t.Helper()
	cmd := hostCommand(netArt.host, args...)
	cmd.Dir = repoRoot(t)
	cmd.Env = append(cleanEnv(), append([]string{envconfig.Control + "=0"}, env...)...)
	if len(args) > 1 { // as NCCL's environment names its net plugin
		cmd.Env = append(cmd.Env, "NCCL_NET_PLUGIN="+args[1])
	}
	// both ranks are in the process group of net_host: a hang kills them all
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	timer := time.AfterFunc(2*time.Minute, func() {
		if cmd.Process != nil {
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		}
	})
	defer timer.Stop()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("net_host %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, out, stderr.String())
	}
	var res [2]map[string]string
	res[0], res[1] = map[string]string{}, map[string]string{}
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) < 3 || (f[0] != "r0" && f[0] != "r1") {
			continue
		}
		res[f[0][1]-'0'][f[1]] = strings.Join(f[2:], " ")
	}
	return res, stderr.String()
}

func num(t *testing.T, m map[string]string, key string) uint64 {
	t.Helper()
	v, ok := m[key]
	if !ok {
		t.Fatalf("net_host printed no %q (have %v)", key, m)
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		t.Fatalf("%s = %q: %v", key, v, err)
	}
	return n
}

// checkTransfer requires every message of both directions delivered intact
// and counted once by the host.
func checkTransfer(t *testing.T, r [2]map[string]string, msgs uint64) {
	t.Helper()
	for rank := 0; rank < 2; rank++ {
		if num(t, r[rank], "init") != 0 {
			t.Fatalf("rank %d: init failed", rank)
		}
		if u := num(t, r[rank], "unsized"); u != 0 {
			t.Errorf("rank %d: %d completions without a size (the test plugin reports every size)", rank, u)
		}
		if b := num(t, r[rank], "bad"); b != 0 {
			t.Errorf("rank %d: %d messages arrived with a wrong size or content", rank, b)
		}
		if s, v := num(t, r[rank], "sends"), num(t, r[rank], "recvs"); s != msgs || v != msgs {
			t.Errorf("rank %d: %d sends and %d receives completed, want %d each", rank, s, v, msgs)
		}
	}
	if a, b := num(t, r[0], "sent_bytes"), num(t, r[1], "recv_bytes"); a != b {
		t.Errorf("rank 0 sent %d bytes, rank 1 received %d", a, b)
	}
	if a, b := num(t, r[1], "sent_bytes"), num(t, r[0], "recv_bytes"); a != b {
		t.Errorf("rank 1 sent %d bytes, rank 0 received %d", a, b)
	}
}

// checkCounted requires the wrapper and the counting policy to have seen
// every completion exactly once, and nothing left in the request table.
func checkCounted(t *testing.T, r [2]map[string]string, msgs, conns uint64) {
	t.Helper()
	for rank := 0; rank < 2; rank++ {
		m := r[rank]
		for _, k := range []string{"w_sends", "w_recvs", "w_calls_send", "w_calls_recv", "m_sends", "m_recvs"} {
			if v := num(t, m, k); v != msgs {
				t.Errorf("rank %d: %s = %d, want %d", rank, k, v, msgs)
			}
		}
		if a, b := num(t, m, "m_sent_bytes"), num(t, m, "sent_bytes"); a != b {
			t.Errorf("rank %d: the policy counted %d bytes sent, the host %d", rank, a, b)
		}
		if a, b := num(t, m, "m_recv_bytes"), num(t, m, "recv_bytes"); a != b {
			t.Errorf("rank %d: the policy counted %d bytes received, the host %d", rank, a, b)
		}
		if v := num(t, m, "m_conns"); v != conns {
			t.Errorf("rank %d: the policy saw %d connections, want %d", rank, v, conns)
		}
		if num(t, m, "w_untracked") != 0 || num(t, m, "w_inflight") != 0 {
			t.Errorf("rank %d: %s untracked, %s left in the request table", rank, m["w_untracked"], m["w_inflight"])
		}
	}
}

// innerLib is the test plugin exporting net ABI v (6 to 12) as its newest
// table (10 and 11: the builds without TCPNET_ABI).
func innerLib(v int) string {
	switch v {
	case 10:
		return netArt.tcp10
	case 11:
		return netArt.tcp11
	}
	return netArt.old[v]
}

// wantDevice is net_host's "device" line for device 0 as the wrapper's
// ncclNetPlugin_v<outer> reports it over the test plugin's v<inner> table:
// the inner plugin's own values, and for the fields its version lacks those
// NCCL's adapters give (docs/nccl-net-abi.md, sections 6 and 7). net_host
// prints "-" for fields the caller's version does not have; for outer v8 it
// converts the v8 structure into a v10 one, so vProps and the limits read 0.
func wantDevice(inner, outer int) string {
	d := "tcpnet0 speed 10000 ptr 1 port 1 latency 0.00 comms 65536 recvs 1"
	if inner <= 9 || inner == 12 { // the TCPNET_ABI builds report their own
		d = "tcpnet0 speed 10000 ptr 1 port 3 latency 2.50 comms 777 recvs 1"
	}
	global := 0
	if inner == 8 { // v8's tcpnet says its registrations are global; v6, v7 have no such field
		global = 1
	}
	d += fmt.Sprintf(" global %d flush 0 type 0 version 0", global)
	p2p, coll := 1<<30, 1<<30
	switch {
	case inner <= 8: // MAX_NET_SIZE, MAX_COLLNET_SIZE
		p2p, coll = 1<<30, 512<<20
	case inner == 12:
		p2p, coll = 1<<29, 1<<28
	}
	if outer == 8 {
		d += " vdevs 0 dev0 0 p2p 0 coll 0"
	} else {
		d += fmt.Sprintf(" vdevs 1 dev0 0 p2p %d coll %d", p2p, coll)
	}
	mreq, ids := "1", "-1 -1"
	if inner == 12 {
		mreq, ids = "4", "2 5"
	}
	switch {
	case outer <= 10:
		d += " mreq - rail - plane -"
	case outer == 11:
		d += " mreq " + mreq + " rail - plane -"
	default:
		d += " mreq " + mreq + " rail " + strings.Replace(ids, " ", " plane ", 1)
	}
	return d
}

func TestNetPluginSymbols(t *testing.T) {
	artifacts(t)
	out, err := exec.Command("nm", "-D", "--defined-only", art.lib).Output()
	if err != nil {
		t.Fatalf("nm: %v", err)
	}
	for _, v := range []int{8, 9, 10, 11, 12} {
		sym := fmt.Sprintf("ncclNetPlugin_v%d", v)
		found := false
		for _, l := range strings.Split(string(out), "\n") {
			f := strings.Fields(l)
			if len(f) == 3 && f[2] == sym && (f[1] == "D" || f[1] == "R") {
				found = true
			}
		}
		if !found {
			t.Errorf("%s is not exported as a data symbol", sym)
		}
	}
}

// TestNetTransfer moves checked data through the inner plugin directly,
// through the wrapper without a policy, and through the wrapper with the
// counting policy for every pairing of the ABI NCCL asks for and the one the
// inner plugin exports.
func TestNetTransfer(t *testing.T) {
	netArtifacts(t)
	const ch, msgs, win = 3, 400, 8
	args := func(lib string, v int) []string {
		return []string{"transfer", lib, strconv.Itoa(v), strconv.Itoa(ch), strconv.Itoa(msgs), strconv.Itoa(win)}
	}
	t.Run("direct", func(t *testing.T) {
		r, _ := netHost(t, nil, args(netArt.tcp11, 11)...)
		checkTransfer(t, r, ch*msgs)
	})
	t.Run("wrapped-no-policy", func(t *testing.T) {
		r, _ := netHost(t, []string{envconfig.Policy + "=none", envconfig.NetPlugin + "=" + netArt.tcp11}, args(art.lib, 11)...)
		checkTransfer(t, r, ch*msgs)
		for rank := 0; rank < 2; rank++ {
			if r[rank]["w_inner"] != "11" || r[rank]["w_outer"] != "11" || r[rank]["w_calls_send"] != "0" {
				t.Errorf("rank %d: %v", rank, r[rank])
			}
		}
	})
	for _, c := range []struct{ outer, inner int }{{10, 11}, {11, 11}, {12, 11}, {10, 10}, {11, 10}, {12, 10}, {10, 12}, {11, 12}, {12, 12}} {
		c := c
		t.Run(fmt.Sprintf("v%d-over-v%d", c.outer, c.inner), func(t *testing.T) {
			r, _ := netHost(t, []string{envconfig.Policy + "=testhost/net_count_a.bpf.o", envconfig.NetPlugin + "=" + innerLib(c.inner)}, args(art.lib, c.outer)...)
			checkTransfer(t, r, ch*msgs)
			// each process: ch listens, ch connects, ch accepts
			checkCounted(t, r, ch*msgs, 3*ch)
			for rank := 0; rank < 2; rank++ {
				if r[rank]["w_inner"] != strconv.Itoa(c.inner) || r[rank]["w_outer"] != strconv.Itoa(c.outer) {
					t.Errorf("rank %d: wrapper reports outer v%s inner v%s", rank, r[rank]["w_outer"], r[rank]["w_inner"])
				}
				if want := wantDevice(c.inner, c.outer); r[rank]["device"] != want {
					t.Errorf("rank %d: device properties\n got %s\nwant %s", rank, r[rank]["device"], want)
				}
			}
		})
	}
}

// TestNetOldInner wraps inner plugins that export only one of the older
// net ABIs NCCL still accepts (v6 to v9, as Google's fastsocket exports v6),
// under the ABIs NCCL 2.27 to 2.30 ask for: checked data moves both ways
// through the wrapper, without a policy (the wrapper records nothing) and
// with the counting policy (every completion counted once by the wrapper and
// by the policy). Sizes an int-size ABI cannot carry are refused by the
// wrapper without calling the plugin, not truncated; a table without a
// required member is refused at load with its name, and NCCL moves on.
// TestNetProps checks the properties and optional members.
func TestNetOldInner(t *testing.T) {
	netArtifacts(t)
	const ch, msgs, win = 2, 150, 8
	for v := 6; v <= 9; v++ {
		for _, outer := range []int{10, 11, 12} {
			for _, policy := range []string{"none", "count"} {
				v, outer, policy := v, outer, policy
				t.Run(fmt.Sprintf("v%d-over-v%d-%s", outer, v, policy), func(t *testing.T) {
					obj := "none"
					if policy == "count" {
						obj = "testhost/net_count_a.bpf.o"
					}
					r, _ := netHost(t, []string{envconfig.Policy + "=" + obj, envconfig.NetPlugin + "=" + netArt.old[v]},
						"transfer", art.lib, strconv.Itoa(outer), strconv.Itoa(ch), strconv.Itoa(msgs), strconv.Itoa(win))
					checkTransfer(t, r, ch*msgs)
					if policy == "count" {
						checkCounted(t, r, ch*msgs, 3*ch)
					}
					for rank := 0; rank < 2; rank++ {
						m := r[rank]
						if m["w_inner"] != strconv.Itoa(v) || m["w_outer"] != strconv.Itoa(outer) {
							t.Errorf("rank %d: wrapper reports outer v%s inner v%s", rank, m["w_outer"], m["w_inner"])
						}
						if policy == "none" {
							for _, k := range []string{"w_sends", "w_recvs", "w_calls_send", "w_calls_recv", "w_inflight", "w_untracked"} {
								if num(t, m, k) != 0 {
									t.Errorf("rank %d: without a policy %s = %s, want 0 (nothing recorded)", rank, k, m[k])
								}
							}
						}
					}
				})
			}
		}
	}
	t.Run("limits", func(t *testing.T) {
		// result and calls that reached the plugin, per call: 3 refused by the
		// wrapper (ncclInternalError, as NCCL's adapters), 4 the plugin's own
		// bounds check on the real size, 0 registered
		refused, reached, taken := "3 0", "4 1", "0 1"
		for _, c := range []struct {
			v                 int
			isend, irecv, reg string
		}{
			{6, refused, refused, refused}, {7, refused, refused, refused}, {8, refused, refused, taken},
			{9, reached, reached, taken}, {11, reached, reached, taken}, {12, reached, reached, taken},
		} {
			cmd := hostCommand(netArt.host, "limits", art.lib, "12")
			cmd.Dir = repoRoot(t)
			cmd.Env = append(cleanEnv(), envconfig.Control+"=0", envconfig.Policy+"=none", envconfig.NetPlugin+"="+innerLib(c.v))
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("net_host limits over v%d: %v\n%s", c.v, err, out)
			}
			got := map[string]string{}
			for _, l := range strings.Split(string(out), "\n") {
				if f := strings.Fields(l); len(f) == 4 && f[0] == "limit" {
					got[f[1]] = f[2] + " " + f[3]
				}
			}
			want := map[string]string{"isend_1g1": c.isend, "isend_4g16": c.isend, "irecv_1g1": c.irecv, "irecv_4g16": c.irecv,
				"regmr_2g": c.reg, "regmr_4g4k": c.reg}
			for k, w := range want {
				if got[k] != w {
					t.Errorf("inner v%d: %s (1g1: 1 GiB + 1, 4g16: 2^32 + 16, 2g: 2^31, 4g4k: 2^32 + 4096) gave %q, "+
						"want %q (result, calls that reached the plugin)", c.v, k, got[k], w)
				}
			}
		}
	})
	t.Run("missing-member", func(t *testing.T) {
		r, stderr := netHost(t, []string{envconfig.Policy + "=none", envconfig.NetPlugin + "=" + netArt.broken},
			"transfer", art.lib, "12", "1", "1", "1")
		for rank := 0; rank < 2; rank++ {
			if r[rank]["init"] == "0" {
				t.Errorf("rank %d: a table without test was accepted", rank)
			}
		}
		if !strings.Contains(stderr, "its ncclNetPlugin_v6 has no test") {
			t.Errorf("no warning naming the missing member:\n%s", stderr)
		}
	})
}

// TestNetProps checks, for every pairing of the ABI NCCL asks for (v8 to
// v12) and the one the inner plugin exports (v6 to v12), what the wrapper
// gives NCCL besides the data path:
//   - the properties, field by field, in the caller's layout (v12's vProps
//     holds 8 devices, so its later fields sit 16 bytes further on), nothing
//     written past it, and for the fields the inner version lacks the values
//     NCCL's adapters give (wantDevice);
//   - no device handle from connect or accept (v6 has none to give: the
//     wrapper stores NULL);
//   - the optional members the inner table lacks absent from every table
//     the wrapper exports (regMrDmaBuf and iflush: none of the test
//     plugins has them; getDeviceMr, irecvConsumed from v7; makeVDevice
//     from v9), those it has present and reaching it;
//   - makeVDevice converted between v12's 8 devices and older 4, with more
//     than 4 refused for an inner plugin older than v12 without calling it.
func TestNetProps(t *testing.T) {
	netArtifacts(t)
	for _, inner := range []int{6, 7, 8, 9, 10, 11, 12} {
		for _, outer := range []int{8, 9, 10, 11, 12} {
			inner, outer := inner, outer
			t.Run(fmt.Sprintf("v%d-over-v%d", outer, inner), func(t *testing.T) {
				r, _ := netHost(t, []string{envconfig.Policy + "=none", envconfig.NetPlugin + "=" + innerLib(inner)},
					"transfer", art.lib, strconv.Itoa(outer), "1", "4", "2")
				checkTransfer(t, r, 4)
				devOffload := inner >= 7 && inner != 10 && inner != 11 // the builds with getDeviceMr, irecvConsumed
				vdev := inner == 9 || inner == 12                      // with makeVDevice
				absent := "regMrDmaBuf iflush"
				if !devOffload {
					absent += " getDeviceMr irecvConsumed"
				}
				m := r[0]
				if want := wantDevice(inner, outer); m["device"] != want {
					t.Errorf("properties\n got %s\nwant %s", m["device"], want)
				}
				if m["props_overrun"] != "0" {
					t.Errorf("%s bytes written past the caller's properties structure", m["props_overrun"])
				}
				for rank := 0; rank < 2; rank++ {
					if r[rank]["devcomm"] != "0" {
						t.Errorf("rank %d: %s connect/accept calls left a device handle (no plugin here has one)", rank, r[rank]["devcomm"])
					}
				}
				for v := 8; v <= 12; v++ {
					want := absent
					if !vdev && v != 8 { // v8's table has no makeVDevice at all
						want += " makeVDevice"
					}
					if got := strings.TrimSpace(m[fmt.Sprintf("absent_v%d", v)]); got != want {
						t.Errorf("ncclNetPlugin_v%d lacks %q, want %q", v, got, want)
					}
				}
				wantCalls := map[string]string{"inner_devmr": "0", "inner_consumed": "0", "inner_vdev": "0"}
				if devOffload {
					if m["devmr"] != "0 1" || m["consumed"] != "0" {
						t.Errorf("getDeviceMr gave %q (want 0 and the plugin's answer), irecvConsumed %q", m["devmr"], m["consumed"])
					}
					wantCalls["inner_devmr"], wantCalls["inner_consumed"] = "1", "1"
				}
				switch {
				case !vdev || outer == 8:
					if m["vdev"] != "none" {
						t.Errorf("makeVDevice present (%q) where the inner plugin or NCCL's version has none", m["vdev"])
					}
				default:
					// devices {0, 7}: the plugin answers 100 * 2 + 7
					if m["vdev"] != "0 207" {
						t.Errorf("makeVDevice of 2 devices gave %q, want 0 207", m["vdev"])
					}
					wantCalls["inner_vdev"] = "1"
					if outer == 12 {
						want := "4" // ncclInvalidArgument: a pre-v12 plugin takes 4 at most
						if inner == 12 {
							want, wantCalls["inner_vdev"] = "0", "2"
						}
						if m["vdev5"] != want {
							t.Errorf("makeVDevice of 5 devices gave %q, want %s", m["vdev5"], want)
						}
					}
				}
				for k, w := range wantCalls {
					if m[k] != w {
						t.Errorf("%s = %q calls reached the plugin, want %s", k, m[k], w)
					}
				}
			})
		}
	}
}

// TestNetOuterOld drives the wrapper's ncclNetPlugin_v9 and _v8 (what NCCL
// 2.24-2.26 and 2.21-2.23 take) over inner plugins old and new: checked data
// both ways, every completion counted once, the version NCCL asked for
// reported, and the properties in the caller's layout (v8's has no virtual
// devices or transfer limits; v9's is v10's, adapted for an old inner).
func TestNetOuterOld(t *testing.T) {
	netArtifacts(t)
	const ch, msgs, win = 2, 150, 8
	for _, outer := range []int{8, 9} {
		for _, inner := range []int{12, 11, 10, 9, 6} {
			outer, inner := outer, inner
			t.Run(fmt.Sprintf("v%d-over-v%d", outer, inner), func(t *testing.T) {
				r, _ := netHost(t, []string{envconfig.Policy + "=testhost/net_count_a.bpf.o", envconfig.NetPlugin + "=" + innerLib(inner)},
					"transfer", art.lib, strconv.Itoa(outer), strconv.Itoa(ch), strconv.Itoa(msgs), strconv.Itoa(win))
				checkTransfer(t, r, ch*msgs)
				checkCounted(t, r, ch*msgs, 3*ch)
				for rank := 0; rank < 2; rank++ {
					if r[rank]["w_inner"] != strconv.Itoa(inner) || r[rank]["w_outer"] != strconv.Itoa(outer) {
						t.Errorf("rank %d: wrapper reports outer v%s inner v%s", rank, r[rank]["w_outer"], r[rank]["w_inner"])
					}
					if want := wantDevice(inner, outer); r[rank]["device"] != want {
						t.Errorf("rank %d: properties\n got %s\nwant %s", rank, r[rank]["device"], want)
					}
				}
			})
		}
	}
}

// TestNetThreads drives connections from many threads, each also
// completing requests its neighbour posted: 40 threads at once, more than
// the wrapper has request tables of their own (8 share one), and 3 waves of
// 20 new threads, which take over the tables of the threads that exited.
// Every completion is counted once by the wrapper and by the policy, none
// is left behind.
func TestNetThreads(t *testing.T) {
	netArtifacts(t)
	for _, c := range []struct{ threads, waves, shared string }{{"40", "1", "8"}, {"20", "3", "0"}} {
		cmd := hostCommand(netArt.host, "threads", art.lib, c.threads, "50", c.waves)
		cmd.Dir = repoRoot(t)
		cmd.Env = append(cleanEnv(), envconfig.Control+"=0", "TCPNET_NULL=1", envconfig.NetPlugin+"="+netArt.tcp11,
			envconfig.Policy+"=testhost/net_count_a.bpf.o")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("net_host threads: %v\n%s", err, out)
		}
		m := map[string]string{}
		for _, line := range strings.Split(string(out), "\n") {
			if f := strings.Fields(line); len(f) == 3 && f[0] == "t" {
				m[f[1]] = f[2]
			}
		}
		want := num(t, m, "sends")
		for _, k := range []string{"w_sends", "w_calls_send", "m_sends"} {
			if v := num(t, m, k); v != want {
				t.Errorf("%s threads x %s waves: %s = %d, want %d", c.threads, c.waves, k, v, want)
			}
		}
		if num(t, m, "w_untracked") != 0 || num(t, m, "w_inflight") != 0 {
			t.Errorf("%s threads x %s waves: %s untracked, %s left in the request tables", c.threads, c.waves,
				m["w_untracked"], m["w_inflight"])
		}
		if m["w_shared_threads"] != c.shared {
			t.Errorf("%s threads x %s waves: %s threads shared a request table, want %s", c.threads, c.waves,
				m["w_shared_threads"], c.shared)
		}
	}
}

// TestNetFill: the wrapper fills the context fields the running program
// reads, as the verifier lists them, and no more once a reload's grace
// period is over: all of them for net_fields, bytes for the counting policy,
// times and flags for the timing one, flags alone for the one that only
// reads the flags (net.h, NCCLBPF_NET_R_*: 0x02 bytes, 0x08 times, 0x10 flags).
func TestNetFill(t *testing.T) {
	netArtifacts(t)
	cmd := hostCommand(netArt.host, "fill", art.lib, "testhost/net_fields.bpf.o", "testhost/net_count_a.bpf.o",
		"testhost/net_timing_times.bpf.o", "testhost/net_timing_flags.bpf.o", "testhost/net_fields.bpf.o")
	cmd.Dir = repoRoot(t)
	cmd.Env = append(cleanEnv(), envconfig.Control+"=0", envconfig.Policy+"=none", envconfig.NetPlugin+"="+netArt.tcp11)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("net_host fill: %v\n%s", err, out)
	}
	var got []string
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(line, "f ") {
			got = append(got, line)
		}
	}
	want := []string{"f 0 0xff 0xff", "f 1 0x02 0x02", "f 2 0x18 0x00", "f 3 0x10 0x00", "f 4 0xff 0xff"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("fields filled after each reload (send, receive):\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestNetFields runs testhost/net_fields.bpf.o, which reads every field of
// the net context and checks each against what the transfer does: the
// wrapper fills exactly the fields a program reads, so a field it forgot
// would show here, under every outer ABI (ncclNetPlugin_v8 to _v12). Which
// versions carry a communicator id is internal/ncclabi/ctxfill's: the test
// hands it to the program as its configuration.
func TestNetFields(t *testing.T) {
	netArtifacts(t)
	const ch, msgs, win = 2, 300, 8
	groups := []string{"", "", "", "event", "kind/reserved", "abi_version/comm_id", "conn_id/dev/peer_key",
		"tag/n", "bytes/posted_bytes", "times/flags", "local_seq"}
	// What each version provides: internal/ncclabi/ctxfill, handed to the policy as its configuration.
	_, desc := ctxfill.ForStruct("ncclbpf_net_ctx")
	since, _ := desc.Rule("comm_id", hook.NetSendEnd)
	config := fmt.Sprintf("%s=abi_oldest=%d,abi_newest=%d,comm_id_since=%d", envconfig.PolicyConfig,
		ctxfill.Net.Oldest, ctxfill.Net.Newest, since.Since)
	var versions []int
	for v := ctxfill.Net.Oldest; v <= ctxfill.Net.Newest; v++ {
		versions = append(versions, v)
	}
	for _, v := range append(versions, 0) {
		name, env, unsized := fmt.Sprintf("v%d", v), []string(nil), uint64(0)
		if v == 0 {
			// a plugin that reports no sizes: every completion flagged, bytes = posted_bytes
			name, env, unsized, v = "no-sizes", []string{"TCPNET_NO_SIZES=1"}, 2*ch*msgs, 12
		}
		t.Run(name, func(t *testing.T) {
			r, _ := netHost(t, append([]string{envconfig.Policy + "=testhost/net_fields.bpf.o", config, envconfig.NetPlugin + "=" + netArt.tcp11}, env...),
				"transfer", art.lib, strconv.Itoa(v), strconv.Itoa(ch), strconv.Itoa(msgs), strconv.Itoa(win))
			if unsized == 0 {
				checkTransfer(t, r, ch*msgs)
			}
			for rank := 0; rank < 2; rank++ {
				if b, u := num(t, r[rank], "bad"), num(t, r[rank], "unsized"); b != 0 || u != unsized {
					t.Errorf("rank %d: host saw %d bad messages and %d completions without a size; want 0 and %d", rank, b, u, unsized)
				}
				if f := num(t, r[rank], "f_11"); f != unsized {
					t.Errorf("rank %d: %d completions flagged NCCLBPF_NET_F_UNSIZED, want %d", rank, f, unsized)
				}
				if s, rv, c := num(t, r[rank], "f_0"), num(t, r[rank], "f_1"), num(t, r[rank], "f_2"); s != ch*msgs || rv != ch*msgs || c != 3*ch {
					t.Errorf("rank %d: the policy saw %d sends, %d receives, %d connections; want %d, %d, %d", rank, s, rv, c, ch*msgs, ch*msgs, 3*ch)
				}
				for k := 3; k < len(groups); k++ {
					if bad := num(t, r[rank], fmt.Sprintf("f_%d", k)); bad != 0 {
						t.Errorf("rank %d: %d events with wrong %s", rank, bad, groups[k])
					}
				}
			}
		})
	}
}

// TestNetReload reloads the policy again and again (alternating two
// objects that define the same counting map) while the data moves: no byte
// is lost or corrupted, and the maps count every completion exactly once.
func TestNetReload(t *testing.T) {
	netArtifacts(t)
	const ch, msgs, win = 4, 1500, 16
	r, _ := netHost(t, []string{envconfig.Policy + "=testhost/net_count_a.bpf.o", envconfig.NetPlugin + "=" + netArt.tcp11},
		"transfer", art.lib, "11", strconv.Itoa(ch), strconv.Itoa(msgs), strconv.Itoa(win),
		"testhost/net_count_a.bpf.o", "testhost/net_count_b.bpf.o", "40")
	checkTransfer(t, r, ch*msgs)
	checkCounted(t, r, ch*msgs, 3*ch)
	for rank := 0; rank < 2; rank++ {
		if num(t, r[rank], "reloads_ok") < 2 {
			t.Errorf("rank %d: only %s reloads happened during the transfer", rank, r[rank]["reloads_ok"])
		}
	}
}

// TestNetFallback: without a usable inner plugin the wrapper's init fails
// with one warning per process, so that NCCL moves on to its next transport.
func TestNetFallback(t *testing.T) {
	netArtifacts(t)
	for _, c := range []struct {
		name string
		env  []string
		warn string
	}{
		{"unset", nil, "NCCLBPF_NET_PLUGIN is not set"},
		{"missing", []string{envconfig.NetPlugin + "=nosuch"}, "libnccl-net-nosuch.so"},
		{"itself", []string{envconfig.NetPlugin + "=" + art.lib}, "is libncclbpf itself"},
		{"not-a-net-plugin", []string{envconfig.NetPlugin + "=" + art.native}, "exports none of"},
		{"init-fails", []string{envconfig.NetPlugin + "=" + netArt.tcp11, "TCPNET_FAIL_INIT=1"}, "init failed"},
	} {
		c := c
		t.Run(c.name, func(t *testing.T) {
			r, stderr := netHost(t, append([]string{envconfig.Policy + "=none"}, c.env...), "transfer", art.lib, "11", "1", "10", "1")
			for rank := 0; rank < 2; rank++ {
				if r[rank]["init"] == "0" || r[rank]["init"] == "" {
					t.Errorf("rank %d: init returned %q, want an error", rank, r[rank]["init"])
				}
			}
			warns := strings.Count(stderr, "NCCL WARN")
			if warns != 2 || strings.Count(stderr, c.warn) != 2 {
				t.Errorf("want one warning per process mentioning %q, got:\n%s", c.warn, stderr)
			}
		})
	}
}

// TestNetLoadsOnlyForNet: the wrapped plugin is loaded only by a process
// whose NCCL uses the library as its net plugin. Opened as a tuner (no
// NCCL_NET_PLUGIN naming it), the library loads no inner plugin (the
// dynamic loader's log names none) and a FIFO named by NCCLBPF_NET_PLUGIN
// is not even opened; as the net plugin, a FIFO is refused without
// blocking, as a policy file would be.
func TestNetLoadsOnlyForNet(t *testing.T) {
	netArtifacts(t)
	fifo := filepath.Join(t.TempDir(), "net.so")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, inner := range []string{netArt.tcp11, fifo} {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		cmd := exec.CommandContext(ctx, art.host, "run", art.lib, "5")
		cmd.Env = append(cleanEnv(), envconfig.Control+"=0", envconfig.Policy+"=builtin:size_aware", envconfig.NetPlugin+"="+inner, "LD_DEBUG=files")
		cmd.Stdin = strings.NewReader("init 0 1 8 1 1 8 8\nstats\nfin 0\n")
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		timedOut := ctx.Err() != nil
		cancel()
		if err != nil || timedOut {
			t.Errorf("tuner with NCCLBPF_NET_PLUGIN=%s: %v (timed out: %v)\n%s", inner, err, timedOut, out)
			continue
		}
		if strings.Contains(stderr.String(), filepath.Base(inner)) {
			t.Errorf("a tuner-only process loaded the net plugin %s:\n%s", inner, stderr.String())
		}
	}
	r, stderr := netHost(t, []string{envconfig.Policy + "=none", envconfig.NetPlugin + "=" + fifo}, "transfer", art.lib, "9", "1", "10", "1")
	for rank := 0; rank < 2; rank++ {
		if r[rank]["init"] == "0" || r[rank]["init"] == "" {
			t.Errorf("rank %d: init returned %q over a FIFO, want an error", rank, r[rank]["init"])
		}
	}
	if strings.Count(stderr, "not a regular file (a FIFO)") != 2 {
		t.Errorf("want one warning per process saying the inner plugin is a FIFO, got:\n%s", stderr)
	}
}

// TestNetTiming: a request is timed (two cycle-counter reads) only for a
// program that reads start_ns, end_ns or duration_ns, as the verifier lists
// the context fields each program reads. A program that reads only flags sees
// every send untimed; one that reads duration_ns sees every send timed.
func TestNetTiming(t *testing.T) {
	netArtifacts(t)
	const ch, msgs = 2, 100
	for _, c := range []struct {
		obj            string
		untimed, timed uint64
	}{
		{"testhost/net_timing_flags.bpf.o", ch * msgs, 0},
		{"testhost/net_timing_times.bpf.o", 0, ch * msgs},
	} {
		r, _ := netHost(t, []string{envconfig.Policy + "=" + c.obj, envconfig.NetPlugin + "=" + netArt.tcp11},
			"transfer", art.lib, "11", strconv.Itoa(ch), strconv.Itoa(msgs), "4")
		checkTransfer(t, r, ch*msgs)
		for rank := 0; rank < 2; rank++ {
			m := r[rank]
			if s, u, d := num(t, m, "m_sends"), num(t, m, "m_untimed"), num(t, m, "m_timed"); s != ch*msgs || u != c.untimed || d != c.timed {
				t.Errorf("%s, rank %d: %d sends, %d untimed, %d with a duration; want %d, %d, %d",
					c.obj, rank, s, u, d, ch*msgs, c.untimed, c.timed)
			}
		}
	}
}

// TestNetSlowPeer runs the example policy policies/net_peers over a job
// with one slow link (the third connection of each process holds every
// send 3 ms): the policy names that connection's peer as the slow one.
func TestNetSlowPeer(t *testing.T) {
	netArtifacts(t)
	const ch = 4
	r, _ := netHost(t, []string{envconfig.Policy + "=policies/net_peers/net_peers.bpf.o", envconfig.NetPlugin + "=" + netArt.tcp11,
		"TCPNET_SLOW_CONN=3", "TCPNET_SLOW_US=3000"}, "transfer", art.lib, "11", strconv.Itoa(ch), "80", "2")
	checkTransfer(t, r, ch*80)
	// Connection ids: rank 0 listens (1..4), connects (5..8), accepts; rank
	// 1 listens, accepts (5..8), connects (9..12).
	want := [2]uint64{ch + 3, 2*ch + 3}
	for rank := 0; rank < 2; rank++ {
		if got := num(t, r[rank], "slow_conn"); got != want[rank] {
			t.Errorf("rank %d: slow connection %d, want %d (%v)", rank, got, want[rank], r[rank])
		}
		if e, all := num(t, r[rank], "slow_ewma_ns"), num(t, r[rank], "all_ewma_ns"); e < 2_000_000 || e < 2*all {
			t.Errorf("rank %d: slow peer EWMA %d ns against %d ns typical", rank, e, all)
		}
	}
}

// TestNetBench runs the cost comparison of BENCHMARKS.md ("Net wrapper")
// at a small size: an isend + test pair through the inner plugin directly
// and through the wrapper, without a program and with the counting
// policy. NCCLBPF_NET_BENCH_N sets the pairs per round (the published
// figures use 2000000).
func TestNetBench(t *testing.T) {
	netArtifacts(t)
	n := "20000"
	if v := os.Getenv(envconfig.NetBenchN); v != "" {
		n = v
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, netArt.host, "bench", art.lib, netArt.tcp11, n)
	cmd.Dir = repoRoot(t)
	cmd.Env = append(cleanEnv(), envconfig.Control+"=0", "TCPNET_NULL=1", envconfig.NetPlugin+"="+netArt.tcp11,
		envconfig.Policy+"=testhost/net_count_a.bpf.o")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("net_host bench: %v\n%s", err, out)
	}
	got := map[string]string{}
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[0] == "bench" {
			got[f[1]] = f[2]
		}
	}
	// The counting policy ran once per pair of the last round and for the
	// two sends of its not-done probe (each round unloads and reloads it,
	// with fresh maps).
	pairs, _ := strconv.Atoi(n)
	if want := strconv.Itoa(pairs + 2); got["m_sends"] != want {
		t.Errorf("the counting policy saw %q sends in the last round, want %s\n%s", got["m_sends"], want, out)
	}
	if !strings.Contains(string(out), "bench cfg net_count_a ") || !strings.Contains(string(out), " notdone_added_ns ") {
		t.Errorf("no per-configuration line for the counting policy:\n%s", out)
	}
	for _, k := range []string{"direct_ns", "wrapper_noprog_ns", "wrapper_count_ns", "added_count_ns"} {
		if _, err := strconv.ParseFloat(got[k], 64); err != nil {
			t.Errorf("no %s in the output:\n%s", k, out)
		}
	}
	t.Logf("%s", out)
}

// TestNetMapDump: the slow peer as an operator sees it, with `ncclbpf map
// dump` over the control socket of a process running policies/net_peers.
func TestNetMapDump(t *testing.T) {
	netArtifacts(t)
	_, _ = lockstepTools(t) // builds the CLI
	dir := filepath.Join(t.TempDir(), "ctl")
	cmd := exec.Command(netArt.host, "transfer", art.lib, "11", "4", "80", "2")
	cmd.Dir = repoRoot(t)
	cmd.Env = append(cleanEnv(), envconfig.ControlDir+"="+dir, "NET_HOST_HOLD=1", envconfig.NetPlugin+"="+netArt.tcp11,
		envconfig.Policy+"=policies/net_peers/net_peers.bpf.o", "TCPNET_SLOW_CONN=3", "TCPNET_SLOW_US=3000")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { stdin.Close(); cmd.Process.Kill(); cmd.Wait() }()
	pid := ""
	timer := time.AfterFunc(2*time.Minute, func() { cmd.Process.Kill() })
	defer timer.Stop()
	for sc := bufio.NewScanner(out); sc.Scan(); {
		if f := strings.Fields(sc.Text()); len(f) == 3 && f[0] == "r0" && f[1] == "hold" {
			pid = f[2]
			break
		}
	}
	if pid == "" {
		t.Fatal("the host ended without holding for the CLI")
	}
	slow, code := cli(t, "map", "dump", "--dir", dir, pid, "net_slow")
	if code != 0 || !strings.Contains(slow, "  2: 7\n") {
		t.Errorf("map dump net_slow (want connection 7 in entry 2): exit %d\n%s", code, slow)
	}
	peers, code := cli(t, "map", "dump", "--dir", dir, pid, "net_peers")
	if code != 0 || !strings.Contains(peers, "8/4096 entries") || !strings.Contains(peers, "conn_id: 7,") {
		t.Errorf("map dump net_peers (want 8 peers and directions, connection 7 among them): exit %d\n%s", code, peers)
	}
	if strings.Contains(slow+peers, "e+") {
		t.Errorf("map dump printed an integer through a float:\n%s%s", slow, peers)
	}
	t.Logf("%s%s", slow, peers)
}

// TestNetDataIsRankLocal: a tuner program deciding from a map that a net
// program fills with measured latencies is refused as rank-divergent, and
// the plugin keeps NCCL's defaults on the net side too (init still fails
// cleanly only for want of an inner plugin, not because of the policy).
func TestNetDataIsRankLocal(t *testing.T) {
	netArtifacts(t)
	out, code := cli(t, "verify", filepath.Join(repoRoot(t), "testhost/net_tuner_divergent.bpf.o"))
	if code == 0 || !strings.Contains(out, "E033") || !strings.Contains(out, "net_lat") {
		t.Errorf("verify accepted a tuner decision taken from net measurements (exit %d):\n%s", code, out)
	}
	r, stderr := netHost(t, []string{envconfig.Policy + "=testhost/net_tuner_divergent.bpf.o", envconfig.NetPlugin + "=" + netArt.tcp11},
		"transfer", art.lib, "11", "2", "100", "4")
	checkTransfer(t, r, 200)
	if !strings.Contains(stderr, "E033") {
		t.Errorf("the refused policy was not reported:\n%s", stderr)
	}
}

// TestNetStrict: with a working inner plugin, NCCLBPF_STRICT=1 and a policy
// that does not load make the net side's init fail too (NCCL then uses its
// next transport), each process saying so once on stderr; without
// NCCLBPF_STRICT the same policy leaves the net side working.
func TestNetStrict(t *testing.T) {
	netArtifacts(t)
	missing := envconfig.Policy + "=" + filepath.Join(t.TempDir(), "missing.bpf.o")
	for _, c := range []struct {
		name   string
		strict string
		fails  bool
	}{{"strict", "1", true}, {"default", "0", false}} {
		t.Run(c.name, func(t *testing.T) {
			r, stderr := netHost(t, []string{missing, envconfig.Strict + "=" + c.strict, envconfig.NetPlugin + "=" + netArt.tcp11},
				"transfer", art.lib, "11", "1", "10", "1")
			for rank := 0; rank < 2; rank++ {
				if failed := r[rank]["init"] != "0"; failed != c.fails {
					t.Errorf("rank %d: init returned %q; want failure %v", rank, r[rank]["init"], c.fails)
				}
			}
			if n := len(stderrLines(stderr)); n != 2 {
				t.Errorf("%d lines from the library on stderr, want one per process (2):\n%s", n, stderr)
			}
		})
	}
}
