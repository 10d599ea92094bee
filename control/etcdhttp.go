package control

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"
)

// EtcdHTTP is the job store on etcd through etcd's JSON gateway (the
// /v3/ HTTP endpoints every etcd 3.4+ serves beside gRPC): the plugin's
// etcd client, small enough to leave NCCL's processes their memory (the
// command line uses etcd's own client, internal/etcdv3). Same keys and the
// same mechanisms: ADD is a transaction on the key's mod revision, WAIT a
// watch from the revision read, compare-set a transaction, and SetLive
// puts a key on a lease that a goroutine renews every HeartbeatPeriod.
// HTTP is control/http1.go's (plain TCP, no net/http).
type EtcdHTTP struct {
	base    string
	timeout time.Duration
	hc      *http1

	mu    sync.Mutex
	count map[string]int64 // the counters' values last seen (Add, Post)
	drop  []string         // answers read, to remove (Take)
	bg    sync.WaitGroup   // removals off the caller's path (Take)
	lease string
	lost  chan struct{}
	stop  chan struct{}
	under []string             // prefixes watched as one (WatchUnder)
	hubs  map[string]*watchHub // the long-lived watches (Take)
}

// DialEtcdHTTP connects to etcd at addr (host:port); timeout bounds every
// call. A store that does not answer is an error here.
func DialEtcdHTTP(addr string, timeout time.Duration) (*EtcdHTTP, error) {
	s := &EtcdHTTP{base: "http://" + addr, timeout: timeout, hc: &http1{addr: addr}, stop: make(chan struct{})}
	if _, _, err := s.rangeKey("ncclbpf/"); err != nil {
		return nil, err
	}
	return s, nil
}

type ekv struct {
	Key         []byte `json:"key,omitempty"`
	Value       []byte `json:"value,omitempty"`
	ModRevision string `json:"mod_revision,omitempty"`
}

type eheader struct {
	Revision string `json:"revision"`
}

func (s *EtcdHTTP) post(ctx context.Context, path string, in, out any) error {
	b, _ := json.Marshal(in)
	resp, done, err := s.hc.do(ctx, path, b)
	if err != nil {
		return s.failed(ctx, path, err)
	}
	defer done()
	body, err := s.hc.readAll(resp)
	if err != nil {
		return s.failed(ctx, path, err)
	}
	if resp.status != 200 {
		var e struct {
			Message string `json:"message"`
		}
		json.Unmarshal(body, &e)
		return fmt.Errorf("etcd %s%s: %d %s %s", s.base, path, resp.status, resp.text, e.Message)
	}
	if err := json.Unmarshal(body, out); err != nil {
		return fmt.Errorf("etcd %s%s: %w", s.base, path, err)
	}
	return nil
}

// failed is the error of a call that got no answer: ErrStoreTimeout when
// its time ran out.
func (s *EtcdHTTP) failed(ctx context.Context, path string, err error) error {
	if ctx.Err() != nil || isTimeout(err) {
		return fmt.Errorf("etcd %s: %w", s.base, ErrStoreTimeout)
	}
	return fmt.Errorf("etcd %s%s: %w", s.base, path, err)
}

func (s *EtcdHTTP) call(path string, in, out any) error {
	ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
	defer cancel()
	return s.post(ctx, path, in, out)
}

type rangeResp struct {
	Header eheader `json:"header"`
	Kvs    []ekv   `json:"kvs"`
}

func (s *EtcdHTTP) rangeKey(key string) (*ekv, string, error) {
	var r rangeResp
	if err := s.call("/v3/kv/range", map[string]any{"key": []byte(key)}, &r); err != nil {
		return nil, "", err
	}
	if len(r.Kvs) == 0 {
		return nil, r.Header.Revision, nil
	}
	return &r.Kvs[0], r.Header.Revision, nil
}

// Set implements Store.
func (s *EtcdHTTP) Set(key string, value []byte) error {
	var r struct{}
	return s.call("/v3/kv/put", map[string]any{"key": []byte(key), "value": value}, &r)
}

// SetLive implements LiveStore.
func (s *EtcdHTTP) SetLive(key string, value []byte) error {
	id, err := s.leaseID()
	if err != nil {
		return err
	}
	var r struct{}
	return s.call("/v3/kv/put", map[string]any{"key": []byte(key), "value": value, "lease": id}, &r)
}

func (s *EtcdHTTP) leaseID() (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lease != "" {
		return s.lease, nil
	}
	var g struct {
		ID string `json:"ID"`
	}
	if err := s.call("/v3/lease/grant", map[string]any{"TTL": int64(LeaseTTL / time.Second)}, &g); err != nil {
		return "", err
	}
	s.lease, s.lost = g.ID, make(chan struct{})
	go s.keepAlive(g.ID, s.lost)
	return s.lease, nil
}

// keepAlive renews the lease every HeartbeatPeriod until Close; once the
// lease is gone (expired during an outage), lost is closed.
func (s *EtcdHTTP) keepAlive(id string, lost chan struct{}) {
	t := time.NewTicker(HeartbeatPeriod)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
		var r struct {
			Result struct {
				TTL string `json:"TTL"`
			} `json:"result"`
		}
		if err := s.call("/v3/lease/keepalive", map[string]any{"ID": id}, &r); err != nil {
			continue // the store is down or slow: try again; the lease may outlive it
		}
		if ttl, _ := strconv.ParseInt(r.Result.TTL, 10, 64); ttl <= 0 {
			close(lost)
			return
		}
	}
}

// Lost implements LiveStore.
func (s *EtcdHTTP) Lost() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lost == nil {
		return nil
	}
	return s.lost
}

// Get implements Store.
func (s *EtcdHTTP) Get(key string) ([]byte, bool, error) {
	kv, _, err := s.rangeKey(key)
	if err != nil || kv == nil {
		return nil, false, err
	}
	return kv.Value, true, nil
}

type txnResp struct {
	Succeeded bool `json:"succeeded"`
	Responses []struct {
		Range *rangeResp `json:"response_range"`
	} `json:"responses"`
}

// Add implements Store: one transaction that sets the counter if it
// holds the value last seen (or is missing, for one not seen yet), and
// reads it otherwise; a failed one is tried again with the value read.
func (s *EtcdHTTP) Add(key string, delta int64) (int64, error) {
	if delta == 0 {
		kv, _, err := s.rangeKey(key)
		if err != nil || kv == nil {
			return 0, err
		}
		return s.counter(key, kv)
	}
	s.mu.Lock()
	cur, seen := s.count[key]
	s.mu.Unlock()
	for {
		cmp := map[string]any{"target": "CREATE", "key": []byte(key), "create_revision": "0", "result": "EQUAL"}
		if seen {
			cmp = map[string]any{"target": "VALUE", "key": []byte(key), "value": []byte(strconv.FormatInt(cur, 10)), "result": "EQUAL"}
		}
		var t txnResp
		err := s.call("/v3/kv/txn", map[string]any{
			"compare": []any{cmp},
			"success": []any{map[string]any{"request_put": map[string]any{"key": []byte(key), "value": []byte(strconv.FormatInt(cur+delta, 10))}}},
			"failure": []any{map[string]any{"request_range": map[string]any{"key": []byte(key)}}},
		}, &t)
		if err != nil {
			return 0, err
		}
		if t.Succeeded {
			s.remember(key, cur+delta)
			return cur + delta, nil
		}
		cur, seen = 0, false
		if len(t.Responses) > 0 && t.Responses[0].Range != nil && len(t.Responses[0].Range.Kvs) > 0 {
			if cur, err = s.counter(key, &t.Responses[0].Range.Kvs[0]); err != nil {
				return 0, err
			}
			seen = true
		}
	}
}

func (s *EtcdHTTP) counter(key string, kv *ekv) (int64, error) {
	n, err := strconv.ParseInt(string(kv.Value), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("etcd %s: %s holds %q, not a counter", s.base, key, kv.Value)
	}
	s.remember(key, n)
	return n, nil
}

func (s *EtcdHTTP) remember(key string, n int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.count == nil {
		s.count = map[string]int64{}
	}
	s.count[key] = n
}

// CompareSet implements Store.
func (s *EtcdHTTP) CompareSet(key string, expected, desired []byte) ([]byte, error) {
	cmp := map[string]any{"target": "VALUE", "key": []byte(key), "value": expected, "result": "EQUAL"}
	if len(expected) == 0 {
		cmp = map[string]any{"target": "CREATE", "key": []byte(key), "create_revision": "0", "result": "EQUAL"}
	}
	var t txnResp
	err := s.call("/v3/kv/txn", map[string]any{
		"compare": []any{cmp},
		"success": []any{map[string]any{"request_put": map[string]any{"key": []byte(key), "value": desired}}},
		"failure": []any{map[string]any{"request_range": map[string]any{"key": []byte(key)}}},
	}, &t)
	if err != nil {
		return nil, err
	}
	if t.Succeeded {
		return desired, nil
	}
	if len(t.Responses) > 0 && t.Responses[0].Range != nil && len(t.Responses[0].Range.Kvs) > 0 {
		return t.Responses[0].Range.Kvs[0].Value, nil
	}
	return nil, nil
}

// Wait implements Store: a key missing when read is watched from the
// revision after that read, so no write between the two is missed.
func (s *EtcdHTTP) Wait(d time.Duration, keys ...string) error {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	for _, k := range keys {
		kv, rev, err := s.rangeKey(k)
		if err != nil {
			return err
		}
		if kv != nil {
			continue
		}
		r, _ := strconv.ParseInt(rev, 10, 64)
		if err := s.watchPut(ctx, k, r+1); err != nil {
			return err
		}
	}
	return nil
}

func (s *EtcdHTTP) watchPut(ctx context.Context, key string, from int64) error {
	_, err := s.watchValue(ctx, key, from)
	return err
}

// errCompacted says that a watch started before the oldest revision etcd
// keeps.
var errCompacted = errors.New("revision compacted")

// watchValue waits for a put of key from revision from on and returns the
// value put.
func (s *EtcdHTTP) watchValue(ctx context.Context, key string, from int64) ([]byte, error) {
	b, _ := json.Marshal(map[string]any{"create_request": map[string]any{"key": []byte(key), "start_revision": strconv.FormatInt(from, 10)}})
	resp, done, err := s.hc.do(ctx, "/v3/watch", b)
	if err != nil {
		return nil, s.failed(ctx, "/v3/watch", err)
	}
	defer done()
	defer resp.conn.c.Close() // a watch's stream does not end: its connection is not reused
	if resp.status != 200 {
		return nil, fmt.Errorf("etcd %s/v3/watch: %d %s", s.base, resp.status, resp.text)
	}
	dec := json.NewDecoder(resp.body)
	for {
		var m struct {
			Result struct {
				Events []struct {
					Type string `json:"type"` // absent: PUT
					KV   ekv    `json:"kv"`
				} `json:"events"`
				Canceled        bool   `json:"canceled"`
				CompactRevision string `json:"compact_revision"`
			} `json:"result"`
		}
		if err := dec.Decode(&m); err != nil {
			if ctx.Err() != nil || isTimeout(err) {
				return nil, fmt.Errorf("etcd %s: %w", s.base, ErrStoreTimeout)
			}
			return nil, fmt.Errorf("etcd %s: watch of %s: %w", s.base, key, err)
		}
		if m.Result.Canceled {
			if m.Result.CompactRevision != "" && m.Result.CompactRevision != "0" {
				return nil, errCompacted
			}
			return nil, fmt.Errorf("etcd %s: watch of %s canceled", s.base, key)
		}
		for _, ev := range m.Result.Events {
			if ev.Type == "" || ev.Type == "PUT" {
				return ev.KV.Value, nil
			}
		}
	}
}

// Post implements ExchangeStore: one transaction takes the number (as
// Add does) and writes the request; it also carries the removal of the
// answers read since the last one (Take).
func (s *EtcdHTTP) Post(counter, prefix string, value []byte) (int64, int64, error) {
	s.mu.Lock()
	cur, seen := s.count[counter]
	drop := s.drop
	if len(drop) > maxDrops {
		drop = drop[:maxDrops]
	}
	s.drop = s.drop[len(drop):]
	s.mu.Unlock()
	for {
		k := strconv.FormatInt(cur+1, 10)
		cmp := map[string]any{"target": "CREATE", "key": []byte(counter), "create_revision": "0", "result": "EQUAL"}
		if seen {
			cmp = map[string]any{"target": "VALUE", "key": []byte(counter), "value": []byte(strconv.FormatInt(cur, 10)), "result": "EQUAL"}
		}
		ops := []any{
			map[string]any{"request_put": map[string]any{"key": []byte(counter), "value": []byte(k)}},
			map[string]any{"request_put": map[string]any{"key": []byte(prefix + k), "value": value}},
		}
		for _, d := range drop {
			// A removal that names the request written here is left out:
			// etcd refuses a transaction that touches one key twice, before
			// it looks at the compares, and that happens when this process
			// guesses a counter it has not seen so low that it names an old
			// request it is also removing. The compare then fails and the
			// next attempt, with the counter read, names a new key; if the
			// compare held, the new request overwrote the old and must stay.
			if d == prefix+k {
				continue
			}
			ops = append(ops, map[string]any{"request_delete_range": map[string]any{"key": []byte(d)}})
		}
		var t struct {
			Header eheader `json:"header"`
			txnResp
		}
		err := s.call("/v3/kv/txn", map[string]any{
			"compare": []any{cmp},
			"success": ops,
			"failure": []any{map[string]any{"request_range": map[string]any{"key": []byte(counter)}}},
		}, &t)
		if err != nil {
			s.mu.Lock()
			s.drop = append(s.drop, drop...)
			s.mu.Unlock()
			return 0, 0, err
		}
		if t.Succeeded {
			s.remember(counter, cur+1)
			rev, _ := strconv.ParseInt(t.Header.Revision, 10, 64)
			return cur + 1, rev, nil
		}
		cur, seen = 0, false
		if len(t.Responses) > 0 && t.Responses[0].Range != nil && len(t.Responses[0].Range.Kvs) > 0 {
			if cur, err = s.counter(counter, &t.Responses[0].Range.Kvs[0]); err != nil {
				return 0, 0, err
			}
			seen = true
		}
	}
}

var (
	_ BatchStore   = (*EtcdHTTP)(nil)
	_ LaterRemover = (*EtcdHTTP)(nil)
)

// PostAll implements BatchStore: the postings go in transactions of up to
// maxTxnOps operations (each posting's number and request, as Post
// writes them, on its counter's last seen value), sent together, with the
// removals of the answers read since the last Post in the room left; a
// transaction whose counters moved is tried again with the values read.
func (s *EtcdHTTP) PostAll(posts []Posting) []Posted {
	out := make([]Posted, len(posts))
	s.mu.Lock()
	drop := s.drop
	s.drop = nil
	s.mu.Unlock()
	chunks := PackPostings(posts, drop)
	var wg sync.WaitGroup
	for _, c := range chunks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.postChunk(posts, c, out)
		}()
	}
	wg.Wait()
	return out
}

// MaxTxnOps is the most operations etcd takes in one transaction's branch
// (its --max-txn-ops, 128 by default).
const MaxTxnOps = 128

// maxTxnOps is MaxTxnOps, as this file spells it.
const maxTxnOps = MaxTxnOps

// TxnChunk is one transaction of a PostAll: postings by index (two
// operations each) and removals (one each).
type TxnChunk struct {
	Posts []int
	Drops []string
}

// PackPostings splits posts and drops into transactions of at most
// MaxTxnOps operations, postings first, no counter twice in one: how both
// etcd clients (this one and the command line's) batch a PostAll.
func PackPostings(posts []Posting, drops []string) []TxnChunk {
	var chunks []TxnChunk
	var cur TxnChunk
	inCur := map[string]bool{}
	ops := 0
	flush := func() {
		if len(cur.Posts)+len(cur.Drops) > 0 {
			chunks = append(chunks, cur)
		}
		cur, inCur, ops = TxnChunk{}, map[string]bool{}, 0
	}
	for i, p := range posts {
		if ops+2 > maxTxnOps || inCur[p.Counter] {
			flush()
		}
		cur.Posts = append(cur.Posts, i)
		inCur[p.Counter] = true
		ops += 2
	}
	for _, d := range drops {
		if inCur[d] {
			continue // the same answer read twice
		}
		if ops+1 > maxTxnOps {
			flush()
		}
		cur.Drops = append(cur.Drops, d)
		inCur[d] = true
		ops++
	}
	flush()
	return chunks
}

// postChunk sends one transaction of PostAll, again until its counters
// held the values compared, and fills out for its postings.
func (s *EtcdHTTP) postChunk(posts []Posting, c TxnChunk, out []Posted) {
	fail := func(err error) {
		for _, i := range c.Posts {
			out[i].Err = err
		}
		s.mu.Lock()
		s.drop = append(s.drop, c.Drops...)
		s.mu.Unlock()
	}
	cur := make([]int64, len(c.Posts))
	seen := make([]bool, len(c.Posts))
	s.mu.Lock()
	for j, i := range c.Posts {
		cur[j], seen[j] = s.count[posts[i].Counter]
	}
	s.mu.Unlock()
	for {
		var cmps, ops, reads []any
		put := map[string]bool{}
		for j, i := range c.Posts {
			p := posts[i]
			k := []byte(strconv.FormatInt(cur[j]+1, 10))
			cmp := map[string]any{"target": "CREATE", "key": []byte(p.Counter), "create_revision": "0", "result": "EQUAL"}
			if seen[j] {
				cmp = map[string]any{"target": "VALUE", "key": []byte(p.Counter), "value": []byte(strconv.FormatInt(cur[j], 10)), "result": "EQUAL"}
			}
			cmps = append(cmps, cmp)
			ops = append(ops,
				map[string]any{"request_put": map[string]any{"key": []byte(p.Counter), "value": k}},
				map[string]any{"request_put": map[string]any{"key": []byte(p.Prefix + string(k)), "value": p.Value}})
			reads = append(reads, map[string]any{"request_range": map[string]any{"key": []byte(p.Counter)}})
			put[p.Prefix+string(k)] = true
		}
		for _, d := range c.Drops {
			if put[d] {
				continue // a request written here (see Post)
			}
			ops = append(ops, map[string]any{"request_delete_range": map[string]any{"key": []byte(d)}})
		}
		var t struct {
			Header eheader `json:"header"`
			txnResp
		}
		txn := map[string]any{"success": ops}
		if len(cmps) > 0 {
			txn["compare"], txn["failure"] = cmps, reads
		}
		if err := s.call("/v3/kv/txn", txn, &t); err != nil {
			fail(err)
			return
		}
		if t.Succeeded || len(cmps) == 0 {
			rev, _ := strconv.ParseInt(t.Header.Revision, 10, 64)
			for j, i := range c.Posts {
				s.remember(posts[i].Counter, cur[j]+1)
				out[i] = Posted{K: cur[j] + 1, Rev: rev}
			}
			return
		}
		if len(t.Responses) != len(c.Posts) {
			fail(fmt.Errorf("etcd %s: a transaction's failure branch gave %d reads for %d counters", s.base, len(t.Responses), len(c.Posts)))
			return
		}
		for j, i := range c.Posts {
			cur[j], seen[j] = 0, false
			if r := t.Responses[j].Range; r != nil && len(r.Kvs) > 0 {
				n, err := s.counter(posts[i].Counter, &r.Kvs[0])
				if err != nil {
					fail(err)
					return
				}
				cur[j], seen[j] = n, true
			}
		}
	}
}

// maxDrops bounds the removals one Post's transaction carries.
const maxDrops = maxTxnOps / 2

// flushDrops removes the answers read that no Post carried away.
func (s *EtcdHTTP) flushDrops() {
	for {
		s.mu.Lock()
		drop := s.drop
		if len(drop) > maxDrops {
			drop = drop[:maxDrops]
		}
		s.drop = s.drop[len(drop):]
		s.mu.Unlock()
		if len(drop) == 0 {
			return
		}
		var ops []any
		for _, d := range drop {
			ops = append(ops, map[string]any{"request_delete_range": map[string]any{"key": []byte(d)}})
		}
		var t txnResp
		if s.call("/v3/kv/txn", map[string]any{"success": ops}, &t) != nil {
			return
		}
	}
}

// Take implements ExchangeStore: it waits on the process's long-lived
// watch over the key's folder (or a prefix given to WatchUnder), whose
// event carries the value; with a revision covered by that watch, no read
// first. The removal is sent with the next Post, or in the background.
func (s *EtcdHTTP) Take(d time.Duration, key string, rev int64, del bool) ([]byte, bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var value []byte
	if h, err := s.hubFor(key); err == nil {
		v, err := h.take(ctx, key, rev)
		if err != nil {
			return nil, false, err
		}
		value = v
	} else {
		return nil, false, err
	}
	if del {
		s.RemoveLater(key)
	}
	return value, true, nil
}

// RemoveLater implements LaterRemover: key goes with the next Post's or
// PostAll's transaction, in the background once many wait, or at Close.
func (s *EtcdHTTP) RemoveLater(key string) {
	s.mu.Lock()
	s.drop = append(s.drop, key)
	flush := len(s.drop) >= 4*maxTxnOps
	s.mu.Unlock()
	if flush {
		s.bg.Add(1)
		go func() {
			defer s.bg.Done()
			s.flushDrops()
		}()
	}
}

// SetDelete implements ExchangeStore: one transaction.
func (s *EtcdHTTP) SetDelete(set string, value []byte, del string) error {
	var t txnResp
	return s.call("/v3/kv/txn", map[string]any{
		"success": []any{
			map[string]any{"request_put": map[string]any{"key": []byte(set), "value": value}},
			map[string]any{"request_delete_range": map[string]any{"key": []byte(del)}},
		},
	}, &t)
}

// Delete implements Store.
func (s *EtcdHTTP) Delete(key string) (bool, error) {
	var r struct {
		Deleted string `json:"deleted"`
	}
	if err := s.call("/v3/kv/deleterange", map[string]any{"key": []byte(key)}, &r); err != nil {
		return false, err
	}
	return r.Deleted != "" && r.Deleted != "0", nil
}

// Close revokes the lease (this process's live keys go at once).
func (s *EtcdHTTP) Close() error {
	s.bg.Wait()
	s.flushDrops()
	s.mu.Lock()
	id := s.lease
	s.lease = ""
	select {
	case <-s.stop:
	default:
		close(s.stop)
	}
	for _, h := range s.hubs {
		h.cancel()
	}
	s.hubs = nil
	s.mu.Unlock()
	if id != "" {
		var r struct{}
		ctx, cancel := context.WithTimeout(context.Background(), min(s.timeout, time.Second))
		defer cancel()
		s.post(ctx, "/v3/lease/revoke", map[string]any{"ID": id}, &r)
	}
	s.hc.closeIdle()
	return nil
}

// String names the store for messages.
func (s *EtcdHTTP) String() string { return "etcd+gateway " + s.base }
