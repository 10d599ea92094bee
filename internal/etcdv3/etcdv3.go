// Package etcdv3 is the job store on etcd through etcd's own Go client
// (go.etcd.io/etcd/client/v3), for the command line: importing it makes
// etcd://HOST:PORT open this store (control.SetEtcdDialer). The plugin
// does not import it (gRPC would add its size to every NCCL process): it
// speaks to etcd through etcd's JSON gateway (control/etcdhttp.go), with
// the same keys, transactions, watches and leases.
package etcdv3

import (
	"context"
	"errors"
	"fmt"
	"github.com/ncclbpf/ncclbpf/control"
	"strconv"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// EtcdStore is the job store on etcd (for jobs without PyTorch's
// TCPStore), behind the same control.Store interface: the same keys under the
// job's prefix, ADD as a compare-and-swap transaction on the key's
// revision, WAIT as a watch from the revision read, compare-set as a
// transaction on the value. A process's registration is attached to a
// lease that the client keeps alive while the process lives: a process
// that finished (or died) drops out of the job within control.LeaseTTL.
type EtcdStore struct {
	addr    string
	timeout time.Duration
	c       *clientv3.Client

	bg    sync.WaitGroup // removals off the caller's path (Take)
	mu    sync.Mutex
	drop  []string                // answers read, to remove (Take)
	count map[string]counterState // the counters last seen (PostAll)
	lease clientv3.LeaseID
	lost  chan struct{} // closed when the lease is lost
}

var (
	_ control.BatchStore   = (*EtcdStore)(nil)
	_ control.LaterRemover = (*EtcdStore)(nil)
)

// counterState is a mailbox counter as last seen: its value and the
// revision of its last write (0: missing).
type counterState struct{ value, rev int64 }

func init() {
	control.SetEtcdDialer(func(addr string, timeout time.Duration) (control.Store, error) { return DialEtcd(addr, timeout) })
}

// DialEtcd connects to an etcd server at addr (host:port); timeout bounds
// the connection and every call.
func DialEtcd(addr string, timeout time.Duration) (*EtcdStore, error) {
	c, err := clientv3.New(clientv3.Config{
		Endpoints:   []string{addr},
		DialTimeout: timeout,
		Logger:      zap.NewNop(),
	})
	if err != nil {
		return nil, fmt.Errorf("etcd %s: %w", addr, err)
	}
	s := &EtcdStore{addr: addr, timeout: timeout, c: c}
	// The client connects lazily: ask once, so that a store that is down
	// is an error here.
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if _, err := c.Get(ctx, "ncclbpf/"); err != nil {
		c.Close()
		return nil, s.wrap(err)
	}
	return s, nil
}

func (s *EtcdStore) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), s.timeout)
}

func (s *EtcdStore) wrap(err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("etcd %s: %w", s.addr, control.ErrStoreTimeout)
	}
	return fmt.Errorf("etcd %s: %w", s.addr, err)
}

// Set implements Store.
func (s *EtcdStore) Set(key string, value []byte) error {
	ctx, cancel := s.ctx()
	defer cancel()
	if _, err := s.c.Put(ctx, key, string(value)); err != nil {
		return s.wrap(err)
	}
	return nil
}

// SetLive sets key for as long as this process keeps its lease alive
// (control.LiveStore).
func (s *EtcdStore) SetLive(key string, value []byte) error {
	id, err := s.leaseID()
	if err != nil {
		return err
	}
	ctx, cancel := s.ctx()
	defer cancel()
	if _, err := s.c.Put(ctx, key, string(value), clientv3.WithLease(id)); err != nil {
		return s.wrap(err)
	}
	return nil
}

func (s *EtcdStore) leaseID() (clientv3.LeaseID, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lease != 0 {
		return s.lease, nil
	}
	ctx, cancel := s.ctx()
	defer cancel()
	g, err := s.c.Grant(ctx, int64(control.LeaseTTL/time.Second))
	if err != nil {
		return 0, s.wrap(err)
	}
	ch, err := s.c.KeepAlive(context.Background(), g.ID)
	if err != nil {
		return 0, s.wrap(err)
	}
	s.lease, s.lost = g.ID, make(chan struct{})
	lost := s.lost
	go func() {
		for range ch {
		}
		close(lost) // the lease expired or the client closed
	}()
	return s.lease, nil
}

// Lost is closed when the lease of this process's live keys is lost (an
// outage longer than control.LeaseTTL): they are gone from the store.
func (s *EtcdStore) Lost() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lost == nil {
		return nil
	}
	return s.lost
}

// Get implements Store.
func (s *EtcdStore) Get(key string) ([]byte, bool, error) {
	ctx, cancel := s.ctx()
	defer cancel()
	r, err := s.c.Get(ctx, key)
	if err != nil {
		return nil, false, s.wrap(err)
	}
	if len(r.Kvs) == 0 {
		return nil, false, nil
	}
	return r.Kvs[0].Value, true, nil
}

// Add implements Store: the integer at key (decimal text) moves by delta
// in a transaction that holds only if the key did not change since it was
// read (retried otherwise).
func (s *EtcdStore) Add(key string, delta int64) (int64, error) {
	ctx, cancel := s.ctx()
	defer cancel()
	for {
		r, err := s.c.Get(ctx, key)
		if err != nil {
			return 0, s.wrap(err)
		}
		var cur, rev int64
		if len(r.Kvs) > 0 {
			if cur, err = strconv.ParseInt(string(r.Kvs[0].Value), 10, 64); err != nil {
				return 0, fmt.Errorf("etcd %s: %s holds %q, not a counter", s.addr, key, r.Kvs[0].Value)
			}
			rev = r.Kvs[0].ModRevision
		}
		if delta == 0 {
			return cur, nil
		}
		t, err := s.c.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(key), "=", rev)).
			Then(clientv3.OpPut(key, strconv.FormatInt(cur+delta, 10))).Commit()
		if err != nil {
			return 0, s.wrap(err)
		}
		if t.Succeeded {
			return cur + delta, nil
		}
	}
}

// CompareSet sets key to desired if its value is expected (a missing key
// matches an empty expected) and returns the value after the call, in one
// transaction.
func (s *EtcdStore) CompareSet(key string, expected, desired []byte) ([]byte, error) {
	ctx, cancel := s.ctx()
	defer cancel()
	cmp := clientv3.Compare(clientv3.Value(key), "=", string(expected))
	if len(expected) == 0 {
		cmp = clientv3.Compare(clientv3.CreateRevision(key), "=", 0)
	}
	t, err := s.c.Txn(ctx).If(cmp).Then(clientv3.OpPut(key, string(desired))).Else(clientv3.OpGet(key)).Commit()
	if err != nil {
		return nil, s.wrap(err)
	}
	if t.Succeeded {
		return desired, nil
	}
	if rr := t.Responses[0].GetResponseRange(); rr != nil && len(rr.Kvs) > 0 {
		return rr.Kvs[0].Value, nil
	}
	return nil, nil
}

// Wait implements Store: each key missing when read is watched from the
// revision of that read, so that no write is missed between the two.
func (s *EtcdStore) Wait(d time.Duration, keys ...string) error {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	for _, k := range keys {
		r, err := s.c.Get(ctx, k)
		if err != nil {
			return s.wrap(err)
		}
		if len(r.Kvs) > 0 {
			continue
		}
		wctx, wcancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
		found := false
		for wr := range s.c.Watch(wctx, k, clientv3.WithRev(r.Header.Revision+1)) {
			if err := wr.Err(); err != nil {
				wcancel()
				if ctx.Err() != nil {
					return s.wrap(ctx.Err())
				}
				return s.wrap(err)
			}
			for _, ev := range wr.Events {
				if ev.Type == clientv3.EventTypePut {
					found = true
				}
			}
			if found {
				break
			}
		}
		wcancel()
		if !found {
			if ctx.Err() != nil {
				return s.wrap(context.DeadlineExceeded)
			}
			return fmt.Errorf("etcd %s: watch of %s ended", s.addr, k)
		}
	}
	return nil
}

// Post implements control.ExchangeStore: the number and the request in
// one transaction on the counter's revision (retried if it moved).
func (s *EtcdStore) Post(counter, prefix string, value []byte) (int64, int64, error) {
	ctx, cancel := s.ctx()
	defer cancel()
	for {
		r, err := s.c.Get(ctx, counter)
		if err != nil {
			return 0, 0, s.wrap(err)
		}
		var cur, rev int64
		if len(r.Kvs) > 0 {
			if cur, err = strconv.ParseInt(string(r.Kvs[0].Value), 10, 64); err != nil {
				return 0, 0, fmt.Errorf("etcd %s: %s holds %q, not a counter", s.addr, counter, r.Kvs[0].Value)
			}
			rev = r.Kvs[0].ModRevision
		}
		k := strconv.FormatInt(cur+1, 10)
		t, err := s.c.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(counter), "=", rev)).
			Then(clientv3.OpPut(counter, k), clientv3.OpPut(prefix+k, string(value))).Commit()
		if err != nil {
			return 0, 0, s.wrap(err)
		}
		if t.Succeeded {
			return cur + 1, t.Header.Revision, nil
		}
	}
}

// Take implements control.ExchangeStore: with a revision, one watch from
// the revision after it, whose event carries the value; the removal goes
// with the next PostAll, or in the background once enough wait, or at
// Close.
func (s *EtcdStore) Take(d time.Duration, key string, rev int64, del bool) ([]byte, bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var value []byte
	found := false
	for !found {
		if rev <= 0 {
			r, err := s.c.Get(ctx, key)
			if err != nil {
				return nil, false, s.wrap(err)
			}
			if len(r.Kvs) > 0 {
				value, found = r.Kvs[0].Value, true
				break
			}
			rev = r.Header.Revision
		}
		wctx, wcancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
		for wr := range s.c.Watch(wctx, key, clientv3.WithRev(rev+1)) {
			if wr.CompactRevision != 0 {
				rev = 0 // read it, and watch from the revision read
				break
			}
			if err := wr.Err(); err != nil {
				wcancel()
				if ctx.Err() != nil {
					return nil, false, s.wrap(ctx.Err())
				}
				return nil, false, s.wrap(err)
			}
			for _, ev := range wr.Events {
				if ev.Type == clientv3.EventTypePut {
					value, found = ev.Kv.Value, true
				}
			}
			if found {
				break
			}
		}
		wcancel()
		if !found && rev != 0 {
			if ctx.Err() != nil {
				return nil, false, s.wrap(context.DeadlineExceeded)
			}
			return nil, false, fmt.Errorf("etcd %s: watch of %s ended", s.addr, key)
		}
	}
	if del {
		s.RemoveLater(key)
	}
	return value, true, nil
}

// RemoveLater implements control.LaterRemover: key goes with the next
// PostAll's transactions, in the background once many wait, or at Close.
func (s *EtcdStore) RemoveLater(key string) {
	s.mu.Lock()
	s.drop = append(s.drop, key)
	flush := len(s.drop) >= maxTxnOps
	s.mu.Unlock()
	if flush {
		s.bg.Add(1)
		go func() {
			defer s.bg.Done()
			s.flushDrops()
		}()
	}
}

// maxTxnOps is etcd's bound on a transaction's operations.
const maxTxnOps = control.MaxTxnOps

// PostAll implements control.BatchStore: the postings go in transactions
// of up to maxTxnOps operations as control.PackPostings packs them (each
// posting's number and request, on its counter's last seen revision), sent
// together, with the removals of the answers read since the last call in
// the room left; a transaction whose counters moved is tried again with
// the values its failure branch read.
func (s *EtcdStore) PostAll(posts []control.Posting) []control.Posted {
	out := make([]control.Posted, len(posts))
	s.mu.Lock()
	drops := s.drop
	s.drop = nil
	s.mu.Unlock()
	chunks := control.PackPostings(posts, drops)
	var wg sync.WaitGroup
	for _, c := range chunks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := s.postChunk(posts, c.Posts, c.Drops, out); err != nil {
				for _, i := range c.Posts {
					out[i].Err = err
				}
				s.mu.Lock()
				s.drop = append(s.drop, c.Drops...)
				s.mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return out
}

// postChunk is one transaction of PostAll, again until the counters held
// the revisions compared; it fills out for idx.
func (s *EtcdStore) postChunk(posts []control.Posting, idx []int, drops []string, out []control.Posted) error {
	ctx, cancel := s.ctx()
	defer cancel()
	state := make([]counterState, len(idx))
	s.mu.Lock()
	for j, i := range idx {
		state[j] = s.count[posts[i].Counter]
	}
	s.mu.Unlock()
	for {
		var cmps []clientv3.Cmp
		var then, reads []clientv3.Op
		put := map[string]bool{}
		for j, i := range idx {
			p := posts[i]
			k := strconv.FormatInt(state[j].value+1, 10)
			cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(p.Counter), "=", state[j].rev))
			then = append(then, clientv3.OpPut(p.Counter, k), clientv3.OpPut(p.Prefix+k, string(p.Value)))
			reads = append(reads, clientv3.OpGet(p.Counter))
			put[p.Prefix+k] = true
		}
		// A counter this process has not seen yet is guessed low, so an
		// attempt may name a request it is also removing: etcd refuses a
		// transaction that touches a key twice, before its compares. Such a
		// removal waits for the next attempt (the compare fails, the counter
		// is read, the names move on).
		for _, d := range drops {
			if put[d] {
				continue
			}
			then = append(then, clientv3.OpDelete(d))
		}
		t, err := s.c.Txn(ctx).If(cmps...).Then(then...).Else(reads...).Commit()
		if err != nil {
			return s.wrap(err)
		}
		s.mu.Lock()
		if s.count == nil {
			s.count = map[string]counterState{}
		}
		if t.Succeeded {
			for j, i := range idx {
				s.count[posts[i].Counter] = counterState{state[j].value + 1, t.Header.Revision}
				out[i] = control.Posted{K: state[j].value + 1, Rev: t.Header.Revision}
			}
			s.mu.Unlock()
			return nil // a removal left out named the request just written: it stays
		}
		s.mu.Unlock()
		if len(t.Responses) != len(idx) {
			return fmt.Errorf("etcd %s: a transaction's failure branch gave %d reads for %d counters", s.addr, len(t.Responses), len(idx))
		}
		for j, i := range idx {
			state[j] = counterState{}
			if rr := t.Responses[j].GetResponseRange(); rr != nil && len(rr.Kvs) > 0 {
				v, err := strconv.ParseInt(string(rr.Kvs[0].Value), 10, 64)
				if err != nil {
					return fmt.Errorf("etcd %s: %s holds %q, not a counter", s.addr, posts[i].Counter, rr.Kvs[0].Value)
				}
				state[j] = counterState{v, rr.Kvs[0].ModRevision}
			}
		}
	}
}

// flushDrops removes the answers read that no PostAll carried away.
func (s *EtcdStore) flushDrops() {
	for {
		s.mu.Lock()
		drops := s.drop
		if len(drops) > maxTxnOps {
			drops = drops[:maxTxnOps]
		}
		s.drop = s.drop[len(drops):]
		s.mu.Unlock()
		if len(drops) == 0 {
			return
		}
		var ops []clientv3.Op
		seen := map[string]bool{}
		for _, d := range drops {
			if !seen[d] {
				seen[d] = true
				ops = append(ops, clientv3.OpDelete(d))
			}
		}
		ctx, cancel := s.ctx()
		_, err := s.c.Txn(ctx).Then(ops...).Commit()
		cancel()
		if err != nil {
			return
		}
	}
}

// SetDelete implements control.ExchangeStore: one transaction.
func (s *EtcdStore) SetDelete(set string, value []byte, del string) error {
	ctx, cancel := s.ctx()
	defer cancel()
	if _, err := s.c.Txn(ctx).Then(clientv3.OpPut(set, string(value)), clientv3.OpDelete(del)).Commit(); err != nil {
		return s.wrap(err)
	}
	return nil
}

// Delete implements Store.
func (s *EtcdStore) Delete(key string) (bool, error) {
	ctx, cancel := s.ctx()
	defer cancel()
	r, err := s.c.Delete(ctx, key)
	if err != nil {
		return false, s.wrap(err)
	}
	return r.Deleted > 0, nil
}

// Close revokes the lease (this process's live keys go at once) and
// closes the connection.
func (s *EtcdStore) Close() error {
	s.bg.Wait()
	s.flushDrops()
	s.mu.Lock()
	id := s.lease
	s.mu.Unlock()
	if id != 0 {
		ctx, cancel := context.WithTimeout(context.Background(), min(s.timeout, time.Second))
		s.c.Revoke(ctx, id)
		cancel()
	}
	return s.c.Close()
}

// String names the store for messages.
func (s *EtcdStore) String() string { return "etcd://" + s.addr }
