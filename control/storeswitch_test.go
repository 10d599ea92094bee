package control

import (
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// simProc is the per-process side of a two-phase switch, simulated in
// this process: it serves its mailbox in the store with the real
// ServeStore and answers prepare, commit and abort as the plugin does
// (refuses a prepare for a call it has passed).
type simProc struct {
	mu    sync.Mutex
	seq   uint64
	tx    string
	state string
	at    uint64
	busy  int           // prepares refused as busy before one is taken
	hang  time.Duration // how long a prepare takes to answer
}

func (r *simProc) handle(p Payload) *Response {
	r.mu.Lock()
	defer r.mu.Unlock()
	res := func() *Response {
		return &Response{Tx: &TxResult{Tx: r.tx, State: r.state, AtSeq: r.at, SeqMax: r.seq}}
	}
	switch req := p.(type) {
	case *Prepare:
		if r.hang > 0 {
			time.Sleep(r.hang)
		}
		if r.busy > 0 {
			r.busy--
			return &Response{Error: BusyText + " (simulated)"}
		}
		if req.AtSeq == nil || *req.AtSeq <= r.seq {
			return &Response{Error: fmt.Sprintf("prepare: a communicator is at call %d, past the activation call", r.seq)}
		}
		r.tx, r.state, r.at = req.Tx, TxPrepared, *req.AtSeq
		return res()
	case *Commit:
		if r.tx != req.Tx || r.state != TxPrepared {
			return &Response{Error: "commit: no such prepared switch here"}
		}
		r.state = TxCommitted
		return res()
	case *Abort:
		if r.tx == req.Tx && r.state == TxPrepared {
			r.state = TxAborted
		}
		return res()
	case *StatsQuery:
		return &Response{Stats: &Stats{Tuner: TunerStats{SeqMax: r.seq}}}
	}
	return &Response{Error: "unknown op " + p.Op()}
}

func (r *simProc) State() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.state
}

// simJob starts n simulated processes, each with its own connection to the
// store (dial), registered as ranks 0..n-1 of a world of n under prefix.
func simJob(t testing.TB, dial func() (Store, error), prefix string, n int) []*simProc {
	t.Helper()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	sims := make([]*simProc, n)
	for i := range sims {
		kv, err := dial()
		if err != nil {
			t.Fatal(err)
		}
		env := map[string]string{"RANK": strconv.Itoa(i), "WORLD_SIZE": strconv.Itoa(n)}
		reg, err := Register(kv, prefix, func(k string) string { return env[k] })
		if err != nil {
			t.Fatal(err)
		}
		sims[i] = &simProc{seq: 100}
		wg.Add(1)
		go func() {
			defer wg.Done()
			ServeStore(kv, prefix, reg.Slot, sims[i].handle, stop, func(error) {})
			kv.Close()
		}()
	}
	t.Cleanup(func() { close(stop); wg.Wait() })
	return sims
}

type storeKind struct {
	name string
	dial func(t testing.TB) func() (Store, error)
}

var storeKinds = []storeKind{
	{"tcpstore", func(t testing.TB) func() (Store, error) {
		addr := startTCPStoreServer(t)
		return func() (Store, error) { return DialTCPStore(addr, 5*time.Second) }
	}},
	{"etcd", func(t testing.TB) func() (Store, error) {
		addr := startEtcd(t)
		return func() (Store, error) { return DialEtcdHTTP(addr, 5*time.Second) }
	}},
}

// TestTwoPhaseThroughStores: eight simulated processes reached only
// through each store: the happy path commits on all eight and records the
// commit in the store; a rank past the activation call aborts the round,
// named, none commits and the abort is recorded; a rank of the world
// that never registered is named before anything is sent.
func TestTwoPhaseThroughStores(t *testing.T) {
	for _, k := range storeKinds {
		t.Run(k.name, func(t *testing.T) {
			dial := k.dial(t)
			prefix := "ncclbpf/sim-" + k.name + "/"
			sims := simJob(t, dial, prefix, 8)
			kv, err := dial()
			if err != nil {
				t.Fatal(err)
			}
			defer kv.Close()
			ranks, err := StoreRanks(kv, prefix, 0)
			if err != nil || len(ranks) != 8 {
				t.Fatalf("ranks: %v %v", ranks, err)
			}
			o := SwitchOptions{Timeout: 5 * time.Second, Decide: StoreDecider(kv, prefix)}
			n := uint64(200)
			res := TwoPhase(ranks, &Prepare{Map: "agreed", Entries: []KV{{Key: "00", Value: "01"}}, AtSeq: &n}, o)
			if !res.Committed {
				t.Fatalf("happy path: %+v", res)
			}
			for i, s := range sims {
				if s.State() != TxCommitted {
					t.Fatalf("rank %d: %s after a committed round", i, s.State())
				}
			}
			if v, _, _ := kv.Get(prefix + "tx/" + res.Tx); string(v) != DecisionCommit {
				t.Fatalf("decision recorded: %q", v)
			}

			sims[5].mu.Lock()
			sims[5].seq = 500
			sims[5].mu.Unlock()
			n = 300
			res = TwoPhase(ranks, &Prepare{Map: "agreed", Entries: []KV{{Key: "00", Value: "01"}}, AtSeq: &n}, o)
			if res.Committed || !strings.Contains(res.Reason, "rank 5 (") || !strings.Contains(res.Reason, "1 of 8 ranks did not prepare") {
				t.Fatalf("a rank past N: %+v", res)
			}
			for i, s := range sims {
				if st := s.State(); st == TxCommitted && s.at == 300 {
					t.Fatalf("rank %d committed an aborted round", i)
				}
			}
			if v, _, _ := kv.Get(prefix + "tx/" + res.Tx); string(v) != DecisionAbort {
				t.Fatalf("decision recorded: %q", v)
			}

			_, err = StoreRanks(kv, prefix, 9)
			if err == nil || !strings.Contains(err.Error(), "rank 8: not registered") {
				t.Fatalf("a world of 9 with 8 registered: %v", err)
			}
		})
	}
}

// TestTCPStoreHeartbeat: a registration whose heartbeat is older than
// LeaseTTL (a finished process) does not count, and a rank of the world
// that has only such a registration is named missing, with why.
func TestTCPStoreHeartbeat(t *testing.T) {
	addr := startTCPStoreServer(t)
	kv, err := DialTCPStore(addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer kv.Close()
	const prefix = "ncclbpf/hb/"
	for i := 0; i < 2; i++ {
		env := map[string]string{"RANK": strconv.Itoa(i), "WORLD_SIZE": "2"}
		if _, err := Register(kv, prefix, func(k string) string { return env[k] }); err != nil {
			t.Fatal(err)
		}
	}
	if rs, err := StoreRanks(kv, prefix, 0); err != nil || len(rs) != 2 {
		t.Fatalf("two live registrations: %v %v", rs, err)
	}
	old := time.Now().Add(-LeaseTTL - time.Second).UnixMilli()
	kv.Set(prefix+"ranks/2/beat", []byte(strconv.FormatInt(old, 10)))
	_, err = StoreRanks(kv, prefix, 0)
	if err == nil || !strings.Contains(err.Error(), "rank 1 (") || !strings.Contains(err.Error(), "no heartbeat for") {
		t.Fatalf("rank 1's heartbeat stopped: %v", err)
	}
	if rs, err := StoreRanks(kv, prefix, 1); err != nil || len(rs) != 1 {
		t.Fatalf("expecting one rank: %v %v", rs, err)
	}
}

// delayProxy forwards TCP connections to addr, each chunk after delay.
type delayProxy struct {
	l     net.Listener
	delay atomic.Int64
}

func startDelayProxy(t testing.TB, addr string) *delayProxy {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &delayProxy{l: l}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", addr)
			if err != nil {
				c.Close()
				continue
			}
			pipe := func(dst, src net.Conn) {
				defer dst.Close()
				defer src.Close()
				buf := make([]byte, 32<<10)
				for {
					n, err := src.Read(buf)
					if n > 0 {
						time.Sleep(time.Duration(p.delay.Load()))
						if _, werr := dst.Write(buf[:n]); werr != nil {
							return
						}
					}
					if err != nil {
						if err != io.EOF {
							return
						}
						return
					}
				}
			}
			go pipe(s, c)
			go pipe(c, s)
		}
	}()
	return p
}

// TestSlowStoreNoSwitch: the store turns slow (every exchange delayed past
// the coordinator's wait) after the ranks registered: the round aborts,
// no rank commits; once the store is fast again, the next round commits on
// all (the ranks' serving loops survived the slow spell). On etcd the
// coordinator's requests go out batched (PostAll), so the whole batch is
// late: every rank is named.
func TestSlowStoreNoSwitch(t *testing.T) {
	for _, k := range []struct {
		name  string
		start func(t testing.TB) string
		dial  func(addr string) (Store, error)
	}{
		{"tcpstore", startTCPStoreServer, func(a string) (Store, error) { return DialTCPStore(a, 5*time.Second) }},
		{"etcd", startEtcd, func(a string) (Store, error) { return DialEtcdHTTP(a, 5*time.Second) }},
	} {
		t.Run(k.name, func(t *testing.T) {
			p := startDelayProxy(t, k.start(t))
			paddr := p.l.Addr().String()
			dial := func() (Store, error) { return k.dial(paddr) }
			const prefix = "ncclbpf/slow/"
			sims := simJob(t, dial, prefix, 4)
			kv, err := dial()
			if err != nil {
				t.Fatal(err)
			}
			defer kv.Close()
			ranks, err := StoreRanks(kv, prefix, 0)
			if err != nil {
				t.Fatal(err)
			}
			p.delay.Store(int64(400 * time.Millisecond))
			n := uint64(200)
			res := TwoPhase(ranks, &Prepare{Map: "agreed", Entries: []KV{{Key: "00", Value: "01"}}, AtSeq: &n}, SwitchOptions{Timeout: 300 * time.Millisecond, Decide: StoreDecider(kv, prefix)})
			if res.Committed || !strings.Contains(res.Reason, "did not prepare") {
				t.Fatalf("a slow store: %+v", res)
			}
			if k.name == "etcd" && !strings.Contains(res.Reason, "4 of 4 ranks did not prepare") {
				t.Fatalf("a slow store, requests batched: %s; want every rank named", res.Reason)
			}
			p.delay.Store(0)
			time.Sleep(2 * time.Second) // the delayed exchanges drain
			for i, s := range sims {
				if s.State() == TxCommitted {
					t.Fatalf("rank %d committed through a slow store", i)
				}
			}
			n = 300
			if res := TwoPhase(ranks, &Prepare{Map: "agreed", Entries: []KV{{Key: "00", Value: "01"}}, AtSeq: &n}, SwitchOptions{Timeout: 5 * time.Second, Decide: StoreDecider(kv, prefix)}); !res.Committed {
				t.Fatalf("after the store recovered: %+v", res)
			}
		})
	}
}

// TestBusyRankAskedAgain: a rank still completing an earlier switch
// refuses a prepare as busy; with BusyUntil the round asks it again and
// commits, without it the round aborts naming it.
func TestBusyRankAskedAgain(t *testing.T) {
	for _, k := range storeKinds {
		t.Run(k.name, func(t *testing.T) {
			dial := k.dial(t)
			prefix := "ncclbpf/busy-" + k.name + "/"
			sims := simJob(t, dial, prefix, 4)
			kv, err := dial()
			if err != nil {
				t.Fatal(err)
			}
			defer kv.Close()
			ranks, err := StoreRanks(kv, prefix, 0)
			if err != nil {
				t.Fatal(err)
			}
			sims[2].mu.Lock()
			sims[2].busy = 3
			sims[2].mu.Unlock()
			n := uint64(200)
			res := TwoPhase(ranks, &Prepare{Map: "agreed", Entries: []KV{{Key: "00", Value: "01"}}, AtSeq: &n},
				SwitchOptions{Timeout: 5 * time.Second, Decide: StoreDecider(kv, prefix), BusyUntil: time.Now().Add(10 * time.Second)})
			if !res.Committed {
				t.Fatalf("a busy rank asked again: %+v", res)
			}
			for i, s := range sims {
				if s.State() != TxCommitted {
					t.Fatalf("rank %d: %s after a committed round", i, s.State())
				}
			}
			sims[1].mu.Lock()
			sims[1].busy = 1
			sims[1].mu.Unlock()
			n = 300
			res = TwoPhase(ranks, &Prepare{Map: "agreed", Entries: []KV{{Key: "00", Value: "01"}}, AtSeq: &n},
				SwitchOptions{Timeout: 5 * time.Second, Decide: StoreDecider(kv, prefix)})
			if res.Committed || !strings.Contains(res.Reason, "rank 1 (") || !strings.Contains(res.Reason, BusyText) {
				t.Fatalf("a busy rank, not asked again: %+v", res)
			}
		})
	}
}

// TestHungRankNamed: one rank of eight answers its prepare only after the
// round's wait (its requests batched with the others' on etcd): the round
// aborts naming it alone, and no rank commits.
func TestHungRankNamed(t *testing.T) {
	for _, k := range storeKinds {
		t.Run(k.name, func(t *testing.T) {
			dial := k.dial(t)
			prefix := "ncclbpf/hung-" + k.name + "/"
			sims := simJob(t, dial, prefix, 8)
			kv, err := dial()
			if err != nil {
				t.Fatal(err)
			}
			defer kv.Close()
			ranks, err := StoreRanks(kv, prefix, 0)
			if err != nil {
				t.Fatal(err)
			}
			sims[6].mu.Lock()
			sims[6].hang = 1500 * time.Millisecond
			sims[6].mu.Unlock()
			n := uint64(200)
			res := TwoPhase(ranks, &Prepare{Map: "agreed", Entries: []KV{{Key: "00", Value: "01"}}, AtSeq: &n},
				SwitchOptions{Timeout: 500 * time.Millisecond, Decide: StoreDecider(kv, prefix)})
			if res.Committed || !strings.Contains(res.Reason, "1 of 8 ranks did not prepare") ||
				!strings.Contains(res.Reason, "rank 6 (") || !strings.Contains(res.Reason, "no answer within") {
				t.Fatalf("a hung rank: %+v", res)
			}
			time.Sleep(2 * time.Second) // the hung prepare and the abort are served
			for i, s := range sims {
				if s.State() == TxCommitted {
					t.Fatalf("rank %d committed an aborted round", i)
				}
			}
		})
	}
}
