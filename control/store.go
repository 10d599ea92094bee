package control

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The control plane over a job's store: every process of a multi-node
// job registers in the job's store at startup (host, pid, rank) and
// serves control requests that arrive in its mailbox there, so that
// agree, reload --all and check reach every rank of the job from any node,
// without the sockets of other hosts. Keys, under Prefix (one per job):
//
//	ranks/count           the number of registrations (an ADD counter)
//	ranks/N               registration N (JSON Registration)
//	ranks/N/beat          its heartbeat: the writer's clock, Unix ms
//	                      (stores without leases: TCPStore)
//	tx/ID                 a two-phase switch's decision: commit or abort
//	mbox/N/next           the last request number handed out for N
//	mbox/N/req/K          request K (a request line, as on the socket), deleted once answered
//	                      (on etcd: by the reader of its answer, with it)
//	mbox/N/resp/K         its answer (JSON Response), deleted once read
//
// A process waits on its next request key (the store wakes it: no
// polling), answers with the same handler as its control socket, and moves
// on. A request nobody wrote after its number was taken is skipped after
// SkipAfter.
//
// A process that finished must not count as a missing rank forever: on
// etcd its registration lives on a lease the client renews (gone within
// LeaseTTL of the process's end); on TCPStore, which has no expiry, the
// serving loop writes a heartbeat every HeartbeatPeriod and a registration
// whose heartbeat is older than LeaseTTL is finished (the hosts' clocks
// must agree within a second or two, as NTP keeps them). A registration
// carries the job's WORLD_SIZE (torchrun's): a rank of the world with no
// live registration is missing, and named.

// Store is what the control plane needs of a job store.
type Store interface {
	Set(key string, value []byte) error
	Get(key string) ([]byte, bool, error)
	Add(key string, delta int64) (int64, error)
	// Wait blocks until every key is set, at most d (ErrStoreTimeout).
	Wait(d time.Duration, keys ...string) error
	Delete(key string) (bool, error)
	// CompareSet sets key to desired if it holds expected (a missing key
	// matches an empty expected) and returns the value after the call.
	CompareSet(key string, expected, desired []byte) ([]byte, error)
	Close() error
}

// LiveStore is a store whose keys can live as long as the process that
// wrote them (etcd's leases).
type LiveStore interface {
	SetLive(key string, value []byte) error
	// Lost is closed once the live keys are gone (nil before any).
	Lost() <-chan struct{}
}

// LeaseTTL is the lifetime of a registration whose process stopped
// renewing it (etcd's lease, or TCPStore's heartbeat).
const LeaseTTL = 5 * time.Second

// HeartbeatPeriod is how often a process renews its registration in a
// store without leases.
const HeartbeatPeriod = time.Second

// Registration is a process's record in the job's store.
type Registration struct {
	Slot int64  `json:"slot"`
	Host string `json:"host"`
	PID  int    `json:"pid"`
	Rank string `json:"rank,omitempty"` // $RANK under torchrun
	// World is $WORLD_SIZE under torchrun: the ranks the job must have.
	World int `json:"world,omitempty"`
}

// Name is how the operator knows the process.
func (r Registration) Name() string {
	s := fmt.Sprintf("%s pid %d", r.Host, r.PID)
	if r.Rank != "" {
		s = "rank " + r.Rank + " (" + s + ")"
	}
	return s
}

// Environment of the job store (read by the plugin and the CLI).
const (
	// EnvStore names the job's store: tcpstore (torchrun's, at
	// MASTER_ADDR:MASTER_PORT), tcpstore://HOST:PORT, or etcd://HOST:PORT.
	EnvStore = "NCCLBPF_STORE"
	// EnvJob names the job (the keys' prefix); default
	// TORCHELASTIC_RUN_ID, else "job".
	EnvJob = "NCCLBPF_JOB"
)

// JobPrefix is the key prefix of job (empty: from the environment).
func JobPrefix(job string, getenv func(string) string) string {
	if job == "" {
		job = getenv(EnvJob)
	}
	if job == "" {
		job = getenv("TORCHELASTIC_RUN_ID")
	}
	if job == "" {
		job = "job"
	}
	return "ncclbpf/" + job + "/"
}

// OpenStore connects to the store named by url (see EnvStore).
func OpenStore(url string, getenv func(string) string, timeout time.Duration) (Store, error) {
	switch {
	case url == "tcpstore":
		host, port := getenv("MASTER_ADDR"), getenv("MASTER_PORT")
		if host == "" || port == "" {
			return nil, errors.New("store tcpstore: MASTER_ADDR and MASTER_PORT are not both set (torchrun sets them); or give tcpstore://HOST:PORT")
		}
		return DialTCPStore(host+":"+port, timeout)
	case strings.HasPrefix(url, "tcpstore://"):
		return DialTCPStore(strings.TrimPrefix(url, "tcpstore://"), timeout)
	case strings.HasPrefix(url, "etcd://"):
		return dialEtcd(strings.TrimPrefix(url, "etcd://"), timeout)
	}
	return nil, fmt.Errorf("store %q: want tcpstore, tcpstore://HOST:PORT or etcd://HOST:PORT", url)
}

// dialEtcd opens etcd://HOST:PORT: etcd's JSON gateway by default, etcd's
// own client where internal/etcdv3 is linked in.
var dialEtcd = func(addr string, timeout time.Duration) (Store, error) { return DialEtcdHTTP(addr, timeout) }

// SetEtcdDialer makes etcd://HOST:PORT open a store with dial.
func SetEtcdDialer(dial func(addr string, timeout time.Duration) (Store, error)) { dialEtcd = dial }

// Register records this process in the job's store and returns its record.
func Register(kv Store, prefix string, getenv func(string) string) (Registration, error) {
	host, _ := os.Hostname()
	n, err := kv.Add(prefix+"ranks/count", 1)
	if err != nil {
		return Registration{}, err
	}
	r := Registration{Slot: n, Host: host, PID: os.Getpid(), Rank: getenv("RANK")}
	r.World, _ = strconv.Atoi(getenv("WORLD_SIZE"))
	b, _ := json.Marshal(r)
	key := prefix + "ranks/" + strconv.FormatInt(n, 10)
	if ls, ok := kv.(LiveStore); ok {
		return r, ls.SetLive(key, b)
	}
	if err := beat(kv, key); err != nil {
		return r, err
	}
	return r, kv.Set(key, b)
}

func beat(kv Store, reg string) error {
	return kv.Set(reg+"/beat", []byte(strconv.FormatInt(time.Now().UnixMilli(), 10)))
}

// ErrLost says that a process's registration is gone from the store (an
// outage longer than LeaseTTL): register again.
var ErrLost = errors.New("the registration expired in the store")

// SkipAfter is how long a process waits for a request whose number was
// taken before it moves past it.
const SkipAfter = 10 * time.Second

// ServeStore answers the requests of slot's mailbox with h until stop is
// closed (nil) or the registration is lost (ErrLost). warn is called once
// per outage of the store.
func ServeStore(kv Store, prefix string, slot int64, h Handler, stop <-chan struct{}, warn func(error)) error {
	reg := prefix + "ranks/" + strconv.FormatInt(slot, 10)
	box := prefix + "mbox/" + strconv.FormatInt(slot, 10) + "/"
	var lost <-chan struct{}
	ls, live := kv.(LiveStore)
	if live {
		lost = ls.Lost()
	}
	k := int64(1)
	var missingSince, lastBeat time.Time
	down := false
	fail := func(err error) {
		if !down {
			warn(err)
		}
		down = true
	}
	for {
		select {
		case <-stop:
			return nil
		case <-lost:
			return ErrLost
		default:
		}
		if !live && time.Since(lastBeat) >= HeartbeatPeriod {
			if err := beat(kv, reg); err != nil {
				fail(err)
				time.Sleep(HeartbeatPeriod)
				continue
			}
			lastBeat = time.Now()
		}
		key := box + "req/" + strconv.FormatInt(k, 10)
		xs, fast := kv.(ExchangeStore)
		var b []byte
		ok := false
		var err error
		if fast {
			// The wait and the read in one exchange where the store allows.
			b, ok, err = xs.Take(HeartbeatPeriod, key, 0, false)
		} else if err = kv.Wait(HeartbeatPeriod, key); err == nil {
			b, ok, err = kv.Get(key)
		}
		if err != nil {
			if !errors.Is(err, ErrStoreTimeout) {
				fail(err)
				time.Sleep(HeartbeatPeriod)
				continue
			}
			// Skip a number taken by a client that never wrote its request.
			n, err := kv.Add(box+"next", 0)
			if err != nil {
				fail(err)
				continue
			}
			down = false
			if n > k {
				// A later request was written: the client of k gave up
				// (its wait timed out and it took k back) or never wrote.
				if j := laterRequest(kv, box, k, n); j > k {
					k, missingSince = j, time.Time{}
					continue
				}
				if missingSince.IsZero() {
					missingSince = time.Now()
				} else if time.Since(missingSince) > SkipAfter {
					k, missingSince = k+1, time.Time{}
				}
			}
			continue
		}
		down, missingSince = false, time.Time{}
		var resp *Response
		switch {
		case !ok:
			continue
		default:
			req, perr := ParseRequest(b)
			if perr != nil {
				resp = errResponse(perr)
			} else {
				resp = safeHandle(h, req)
			}
		}
		if resp.Error == "" {
			resp.OK = true
		}
		out, _ := json.Marshal(resp)
		answer := box + "resp/" + strconv.FormatInt(k, 10)
		if _, later := kv.(LaterRemover); later {
			// one plain write: whoever reads the answer removes the request
			// with it (StoreRank)
			kv.Set(answer, out)
		} else if fast {
			xs.SetDelete(answer, out, key)
		} else {
			kv.Set(answer, out)
			kv.Delete(key)
		}
		k++
	}
}

// ExchangeStore is a store that does the steps of a mailbox exchange in
// fewer round trips than the plain calls (both stores here implement it).
type ExchangeStore interface {
	// Post takes the next number k from the counter (as Add(counter, 1))
	// and sets prefix+k to value, in one step where the store allows; it
	// returns k and the store's revision of the write (0 when the store
	// keeps none).
	Post(counter, prefix string, value []byte) (k, rev int64, err error)
	// Take waits at most d for key (ErrStoreTimeout), written after
	// revision rev when rev > 0, and returns its value; ok is false when
	// the key went again before it was read. With del, it also removes
	// the key (one only the caller removes), off the caller's path where
	// the store allows.
	Take(d time.Duration, key string, rev int64, del bool) (value []byte, ok bool, err error)
	// SetDelete sets one key and removes another, in one step where the
	// store allows.
	SetDelete(set string, value []byte, del string) error
}

// laterRequest is the first request after k up to n that is in the
// mailbox (k when none is).
func laterRequest(kv Store, box string, k, n int64) int64 {
	for j := k + 1; j <= n && j <= k+64; j++ {
		if _, ok, err := kv.Get(box + "req/" + strconv.FormatInt(j, 10)); err == nil && ok {
			return j
		}
	}
	return k
}

func safeHandle(h Handler, req Payload) (resp *Response) {
	defer func() {
		if r := recover(); r != nil {
			resp = &Response{Error: fmt.Sprintf("internal error: %v", r)}
		}
	}()
	if resp = h(req); resp == nil {
		resp = &Response{Error: "internal error: no response"}
	}
	return resp
}

// StoreRank is a process of the job, reached through the job's store.
type StoreRank struct {
	Store  Store
	Prefix string
	Reg    Registration
}

// Name implements Rank.
func (s StoreRank) Name() string { return s.Reg.Name() }

// Call implements Rank: the request goes into the process's mailbox and
// the answer is awaited there; the whole exchange takes at most timeout,
// however slow the store (a late exchange finishes in the background,
// bounded by the store's own timeout).
func (s StoreRank) Call(req Payload, timeout time.Duration) (*Response, error) {
	type answer struct {
		resp *Response
		err  error
	}
	ch := make(chan answer, 1)
	t0 := time.Now()
	go func() {
		r, err := s.call(req, timeout)
		ch <- answer{r, err}
	}()
	select {
	case a := <-ch:
		return a.resp, a.err
	case <-time.After(timeout + timeout/10):
		return nil, fmt.Errorf("%s: no answer within %v through the store (the store is slow, or the process is gone or hung)", s.Name(), time.Since(t0).Round(time.Millisecond))
	}
}

func (s StoreRank) box() string {
	return s.Prefix + "mbox/" + strconv.FormatInt(s.Reg.Slot, 10) + "/"
}

func (s StoreRank) call(req Payload, timeout time.Duration) (*Response, error) {
	box := s.box()
	b, err := EncodeRequest(req)
	if err != nil {
		return nil, err
	}
	xs, fast := s.Store.(ExchangeStore)
	watchAnswers(s.Store, s.Prefix)
	var k, rev int64
	if fast {
		k, rev, err = xs.Post(box+"next", box+"req/", b)
	} else if k, err = s.Store.Add(box+"next", 1); err == nil {
		err = s.Store.Set(box+"req/"+strconv.FormatInt(k, 10), b)
	}
	if err != nil {
		return nil, err
	}
	return s.await(req, k, rev, timeout)
}

// watchAnswers makes a store that can watch a whole prefix keep one
// watch over every mailbox's answers, not one per exchange.
func watchAnswers(kv Store, prefix string) {
	if w, ok := kv.(interface{ WatchUnder(string) }); ok {
		w.WatchUnder(prefix + "mbox/")
	}
}

// await waits at most timeout for the answer to request k (posted at the
// store's revision rev) and reads it.
func (s StoreRank) await(req Payload, k, rev int64, timeout time.Duration) (*Response, error) {
	box := s.box()
	xs, fast := s.Store.(ExchangeStore)
	ks := strconv.FormatInt(k, 10)
	var line []byte
	ok := false
	var err error
	if fast {
		line, ok, err = xs.Take(timeout, box+"resp/"+ks, rev, true)
	} else if err = s.Store.Wait(timeout, box+"resp/"+ks); err == nil {
		line, ok, err = s.Store.Get(box + "resp/" + ks)
		s.Store.Delete(box + "resp/" + ks)
	}
	if errors.Is(err, ErrStoreTimeout) {
		s.Store.Delete(box + "req/" + ks)
		return nil, fmt.Errorf("%s: no answer within %v through the store (the process is gone or hung)", s.Name(), timeout)
	}
	if err != nil || !ok {
		s.Store.Delete(box + "req/" + ks)
		return nil, fmt.Errorf("%s: answer lost: %v", s.Name(), err)
	}
	if lr, later := s.Store.(LaterRemover); later {
		// the serving process left its request in place (ServeStore)
		lr.RemoveLater(box + "req/" + ks)
	}
	var resp Response
	if err := json.Unmarshal(line, &resp); err != nil {
		return nil, fmt.Errorf("%s: answer to %s: %w", s.Name(), req.Op(), err)
	}
	if !resp.OK {
		return &resp, answerError(resp.Error)
	}
	return &resp, nil
}

// LaterRemover is a store that removes keys with its next batch of writes
// (etcd: the next PostAll's transactions, or at Close) rather than with a
// write each. On such a store a serving process answers with one plain
// write and leaves its request in the mailbox; the coordinator that reads
// the answer removes both.
type LaterRemover interface {
	RemoveLater(key string)
}

// Posting is one request for one mailbox: what ExchangeStore.Post takes.
type Posting struct {
	Counter, Prefix string
	Value           []byte
}

// Posted is what became of a Posting: its number and the store's revision
// of its write, or why it was not written.
type Posted struct {
	K, Rev int64
	Err    error
}

// BatchStore is an ExchangeStore that writes requests into many mailboxes
// in a few steps (on etcd, a few transactions) instead of one each.
type BatchStore interface {
	ExchangeStore
	// PostAll does what Post does for every posting; each is written or
	// not as a whole.
	PostAll(posts []Posting) []Posted
}

// callAll sends req to every rank, in parallel, and calls done once per
// rank with its answer (one call at a time). The ranks reached through
// one BatchStore get their requests in a few writes (PostAll) instead of
// one each; the others are called one by one (Rank.Call). Each rank's
// answer takes at most timeout, however slow the store, as with Call.
func callAll(ranks []Rank, req Payload, timeout time.Duration, done func(i int, resp *Response, err error)) {
	var mu sync.Mutex
	report := func(i int, resp *Response, err error) {
		mu.Lock()
		defer mu.Unlock()
		done(i, resp, err)
	}
	batches := map[BatchStore][]int{}
	var single []int
	for i, r := range ranks {
		if sr, ok := r.(StoreRank); ok {
			if bs, ok := sr.Store.(BatchStore); ok {
				batches[bs] = append(batches[bs], i)
				continue
			}
		}
		single = append(single, i)
	}
	var wg sync.WaitGroup
	for bs, idx := range batches {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rs := make([]StoreRank, len(idx))
			for j, i := range idx {
				rs[j] = ranks[i].(StoreRank)
			}
			callBatch(bs, rs, req, timeout, func(j int, resp *Response, err error) { report(idx[j], resp, err) })
		}()
	}
	for _, i := range single {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := ranks[i].Call(req, timeout)
			report(i, resp, err)
		}()
	}
	wg.Wait()
}

// callBatch is callAll for ranks reached through one BatchStore: one
// PostAll, then each answer awaited on its own.
func callBatch(bs BatchStore, rs []StoreRank, req Payload, timeout time.Duration, done func(j int, resp *Response, err error)) {
	t0 := time.Now()
	b, err := EncodeRequest(req)
	if err != nil {
		for j := range rs {
			done(j, nil, err)
		}
		return
	}
	type answer struct {
		j    int
		resp *Response
		err  error
	}
	ch := make(chan answer, len(rs))
	go func() {
		posts := make([]Posting, len(rs))
		for j, r := range rs {
			watchAnswers(r.Store, r.Prefix)
			box := r.box()
			posts[j] = Posting{Counter: box + "next", Prefix: box + "req/", Value: b}
		}
		for j, p := range bs.PostAll(posts) {
			if p.Err != nil {
				ch <- answer{j, nil, p.Err}
				continue
			}
			go func() {
				resp, err := rs[j].await(req, p.K, p.Rev, timeout)
				ch <- answer{j, resp, err}
			}()
		}
	}()
	answered := make([]bool, len(rs))
	late := time.NewTimer(timeout + timeout/10)
	defer late.Stop()
	for left := len(rs); left > 0; left-- {
		select {
		case a := <-ch:
			answered[a.j] = true
			done(a.j, a.resp, a.err)
		case <-late.C:
			// a late exchange finishes in the background, bounded by the
			// store's own timeout, as with Call
			for j, r := range rs {
				if !answered[j] {
					done(j, nil, fmt.Errorf("%s: no answer within %v through the store (the store is slow, or the process is gone or hung)", r.Name(), time.Since(t0).Round(time.Millisecond)))
				}
			}
			return
		}
	}
}

// StoreRanks lists the live processes registered in the job's store. It
// fails, naming them, when ranks of the job's world (WORLD_SIZE, as the
// registrations carry it, or expect when > 0) have no live registration;
// registrations that expired (finished processes) do not count.
func StoreRanks(kv Store, prefix string, expect int) ([]Rank, error) {
	n, err := kv.Add(prefix+"ranks/count", 0)
	if err != nil {
		return nil, err
	}
	_, live := kv.(LiveStore)
	now := time.Now()
	var out []Rank
	ranksSeen := map[string]bool{}
	gone := map[string]string{}
	world := expect
	for i := int64(1); i <= n; i++ {
		key := prefix + "ranks/" + strconv.FormatInt(i, 10)
		b, ok, err := kv.Get(key)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		var r Registration
		if err := json.Unmarshal(b, &r); err != nil {
			return nil, fmt.Errorf("registration %d: %w", i, err)
		}
		if expect <= 0 && r.World > world {
			world = r.World
		}
		if !live {
			hb, ok, err := kv.Get(key + "/beat")
			if err != nil {
				return nil, err
			}
			ms, _ := strconv.ParseInt(string(hb), 10, 64)
			if age := now.Sub(time.UnixMilli(ms)); !ok || age > LeaseTTL {
				gone[r.Rank] = fmt.Sprintf("%s: no heartbeat for %v (finished, or cut off from the store)", r.Name(), age.Round(time.Second))
				continue
			}
		}
		ranksSeen[r.Rank] = true
		out = append(out, StoreRank{Store: kv, Prefix: prefix, Reg: r})
	}
	if world > 0 {
		var missing []string
		for i := 0; i < world; i++ {
			rk := strconv.Itoa(i)
			if ranksSeen[rk] {
				continue
			}
			if why, ok := gone[rk]; ok {
				missing = append(missing, why)
			} else {
				missing = append(missing, "rank "+rk+": not registered")
			}
		}
		if len(missing) == 0 && len(out) != world && len(ranksSeen) != world {
			missing = append(missing, fmt.Sprintf("%d live registrations for a world of %d", len(out), world))
		}
		if len(missing) > 0 {
			return nil, fmt.Errorf("%d of the job's %d ranks are missing from %s in the store (nothing was sent):\n  %s",
				len(missing), world, prefix, strings.Join(missing, "\n  "))
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no live process registered under %s in the store (set %s in the job's environment)", prefix, EnvStore)
	}
	return out, nil
}

// StoreDecider records a round's decision in the job's store under
// tx/ID with one compare-set (SwitchOptions.Decide): the first decision
// recorded for a round is its decision.
func StoreDecider(kv Store, prefix string) func(tx, decision string) (string, error) {
	return func(tx, decision string) (string, error) {
		got, err := kv.CompareSet(prefix+"tx/"+tx, nil, []byte(decision))
		return string(got), err
	}
}
