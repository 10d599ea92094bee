package e2e

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/ncclbpf/ncclbpf/control"
	"github.com/ncclbpf/ncclbpf/internal/envconfig"
)

func u64hex(v uint64) string {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], v)
	return hex.EncodeToString(b[:])
}

func ctlCall(t *testing.T, dir string, pid int, req control.Payload) (*control.Response, error) {
	t.Helper()
	c, err := control.DialPID(dir, pid)
	if err != nil {
		t.Fatalf("pid %d: %v", pid, err)
	}
	defer c.Close()
	return c.Call(req)
}

// switchedAt checks pid's decision record from call lo on: TREE/SIMPLE on
// `before` channels for every kept call below n, `after` from n on; at
// least one call on each side must be kept.
func switchedAt(t *testing.T, dir string, pid int, lo, n uint64, before, after int32) {
	t.Helper()
	resp, err := ctlCall(t, dir, pid, &control.DecisionsQuery{})
	if err != nil || len(resp.Decisions) != 1 {
		t.Fatalf("pid %d: decisions: %v %+v", pid, err, resp)
	}
	var below, from int
	for _, d := range resp.Decisions[0].Recent {
		if d.Seq < lo {
			continue
		}
		want := before
		if d.Seq >= n {
			want = after
			from++
		} else {
			below++
		}
		if d.Channels != want || d.Algorithm != 0 || d.Protocol != 2 {
			t.Fatalf("pid %d: call %d decided %s; want %d channels (switch at %d)", pid, d.Seq, d, want, n)
		}
	}
	if below == 0 || from == 0 {
		t.Fatalf("pid %d: the kept calls do not straddle %d (%d before, %d after)", pid, n, below, from)
	}
}

var activeRe = regexp.MustCompile(`active from call (\d+)`)

// TestAgreedMapSwitchesEveryRankAtOneCall: three ranks run a policy whose
// channel count is the value of its agreed map. Writing the agreed map
// without an activation point is refused; each rank gets a different
// rank-local value; `ncclbpf agree --reduce max --at-seq +200` gives every
// rank the maximum, and every rank's decision record shows the old channel
// count on every call before the activation call and the new one from it on
// (compared call by call over the 256 kept); check says consistent. Then the
// cross-node path: export, combine, import at an absolute call. Mutations
// caught: an agreed update published at once instead of armed (calls before
// N show the new value), a reduction that ignores all but one rank (wrong
// value), an import that accepts +K, an agreed update that makes the
// running object its own rollback target.
func TestAgreedMapSwitchesEveryRankAtOneCall(t *testing.T) {
	root := repoRoot(t)
	dir := filepath.Join(t.TempDir(), "ctl")
	pids := startRanks(t, 3, dir, []string{envconfig.Policy + "=" + filepath.Join(root, "testhost/agreed_ch.bpf.o")}, 2000, 90)
	waitSeq(t, dir, pids, 10)

	// No write of an agreed map without an activation point.
	_, err := ctlCall(t, dir, pids[0], &control.MapUpdate{Map: "agreed", Key: "00000000", Value: u64hex(9)})
	if err == nil || !strings.Contains(err.Error(), "agreed map") || !strings.Contains(err.Error(), "--at-seq") {
		t.Fatalf("plain update of an agreed map: %v", err)
	}
	_, err = ctlCall(t, dir, pids[0], &control.AgreedUpdate{Map: "agreed",
		Entries: []control.KV{{Key: "00000000", Value: u64hex(9)}}})
	if err == nil || !strings.Contains(err.Error(), "at_seq") {
		t.Fatalf("agreed update without at_seq: %v", err)
	}
	_, err = ctlCall(t, dir, pids[0], &control.AgreedUpdate{Map: "local",
		Entries: []control.KV{{Key: "00000000", Value: u64hex(9)}}, AtSeq: new(uint64)})
	if err == nil || !strings.Contains(err.Error(), "not an agreed map") {
		t.Fatalf("agreed update of a plain map: %v", err)
	}
	out, code := cli(t, "map", "update", "--dir", dir, strconv.Itoa(pids[0]), "agreed", "0", "9")
	if code == 0 || !strings.Contains(out, "agreed map") {
		t.Fatalf("ncclbpf map update of an agreed map: exit %d\n%s", code, out)
	}

	// Rank-local values 3, 4, 5; the agreement is their maximum.
	for r, pid := range pids {
		if _, err := ctlCall(t, dir, pid, &control.MapUpdate{Map: "local", Key: "00000000",
			Value: u64hex(uint64(3 + r))}); err != nil {
			t.Fatal(err)
		}
	}
	args := []string{"agree", "--dir", dir, "--from", "local", "--to", "agreed", "--reduce", "max", "--at-seq", "+200"}
	for _, pid := range pids {
		args = append(args, strconv.Itoa(pid))
	}
	out, code = cli(t, args...)
	m := activeRe.FindAllStringSubmatch(out, -1)
	if code != 0 || len(m) != 3 || m[0][1] != m[1][1] || m[1][1] != m[2][1] {
		t.Fatalf("agree: exit %d, want every rank armed at one call\n%s", code, out)
	}
	n, _ := strconv.ParseUint(m[0][1], 10, 64)
	waitSeq(t, dir, pids, n+20)
	for _, pid := range pids {
		switchedAt(t, dir, pid, 0, n, 2, 5)
	}
	if out, code := cli(t, "check", "--dir", dir); code != 0 || !strings.Contains(out, "AGREE") {
		t.Fatalf("check after the agreement: exit %d\n%s", code, out)
	}
	// An agreed update runs the same object again: rollback still has nothing earlier to go to.
	if resp, err := ctlCall(t, dir, pids[0], &control.StatsQuery{}); err != nil ||
		resp.Stats.Reload.Previous != "" || resp.Stats.Reload.Reloads != 1 {
		t.Fatalf("stats after an agreed update: %v %+v", err, resp.Stats.Reload)
	}

	// Across nodes: each node exports its partial, the partials are
	// combined, every node imports the result at the same absolute call.
	for r, pid := range pids {
		if _, err := ctlCall(t, dir, pid, &control.MapUpdate{Map: "local", Key: "00000000",
			Value: u64hex(uint64(10 + r))}); err != nil {
			t.Fatal(err)
		}
	}
	tmp := t.TempDir()
	nodeA, nodeB, all := filepath.Join(tmp, "a.json"), filepath.Join(tmp, "b.json"), filepath.Join(tmp, "all.json")
	if out, code := cli(t, "agree", "--dir", dir, "--from", "local", "--reduce", "max", "--export", nodeA,
		strconv.Itoa(pids[0]), strconv.Itoa(pids[1])); code != 0 {
		t.Fatalf("export: %s", out)
	}
	if out, code := cli(t, "agree", "--dir", dir, "--from", "local", "--reduce", "max", "--export", nodeB,
		strconv.Itoa(pids[2])); code != 0 {
		t.Fatalf("export: %s", out)
	}
	if out, code := cli(t, "agree", "--combine", "--output", all, nodeA, nodeB); code != 0 {
		t.Fatalf("combine: %s", out)
	}
	if out, code := cli(t, "agree", "--dir", dir, "--import", all, "--to", "agreed", "--at-seq", "+40"); code != 2 ||
		!strings.Contains(out, "absolute") {
		t.Fatalf("import with +K: exit %d\n%s", code, out)
	}
	n2 := seqOf(dir, pids[0]) + 80
	out, code = cli(t, "agree", "--dir", dir, "--import", all, "--to", "agreed", "--at-seq", fmt.Sprint(n2))
	if code != 0 || strings.Count(out, fmt.Sprintf("active from call %d", n2)) != 3 {
		t.Fatalf("import: exit %d\n%s", code, out)
	}
	waitSeq(t, dir, pids, n2+20)
	for _, pid := range pids {
		switchedAt(t, dir, pid, n, n2, 5, 12)
	}
}
