package control

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
)

// One long-lived watch per key prefix and process (a watchHub), instead
// of a watch per exchange: a serving process watches its mailbox's
// requests, a coordinator every mailbox of the job (WatchUnder), and Take
// waits on the hub's events. A put nobody waits for yet is kept until it
// is taken or the key is removed; a waiter sets the revision after which
// the put must be.

type seenPut struct {
	value []byte
	rev   int64
}

type hubWaiter struct {
	rev int64
	ch  chan seenPut
}

type watchHub struct {
	s      *EtcdHTTP
	prefix string
	cancel context.CancelFunc

	mu      sync.Mutex
	start   int64 // the first revision the watch covers
	seen    map[string]seenPut
	waiters map[string][]*hubWaiter
	resync  chan struct{} // closed when events may have been missed
}

// WatchUnder makes Take wait on one watch over every key under prefix
// (instead of one over the key's folder).
func (s *EtcdHTTP) WatchUnder(prefix string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.under {
		if p == prefix {
			return
		}
	}
	s.under = append(s.under, prefix)
}

// hubFor returns the running hub whose watch covers key, starting it.
func (s *EtcdHTTP) hubFor(key string) (*watchHub, error) {
	s.mu.Lock()
	prefix := ""
	for _, p := range s.under {
		if strings.HasPrefix(key, p) && len(p) > len(prefix) {
			prefix = p
		}
	}
	if prefix == "" {
		prefix = key[:strings.LastIndexByte(key, '/')+1]
	}
	if h, ok := s.hubs[prefix]; ok {
		s.mu.Unlock()
		return h, nil
	}
	s.mu.Unlock()
	seen, r, err := s.rangePrefix(prefix)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	h := &watchHub{s: s, prefix: prefix, cancel: cancel, start: r + 1,
		seen: seen, waiters: map[string][]*hubWaiter{}, resync: make(chan struct{})}
	s.mu.Lock()
	if old, ok := s.hubs[prefix]; ok {
		s.mu.Unlock()
		cancel()
		return old, nil
	}
	select {
	case <-s.stop:
		s.mu.Unlock()
		cancel()
		return nil, fmt.Errorf("etcd %s: closed", s.base)
	default:
	}
	if s.hubs == nil {
		s.hubs = map[string]*watchHub{}
	}
	s.hubs[prefix] = h
	s.mu.Unlock()
	go h.run(ctx, r+1)
	return h, nil
}

// run keeps the watch from revision from on until ctx ends, again after
// a broken stream from the revision after the last seen; after a
// compaction it starts over at the current revision and makes the waiters
// read their keys.
func (h *watchHub) run(ctx context.Context, from int64) {
	for ctx.Err() == nil {
		last, err := h.stream(ctx, from)
		if last >= from {
			from = last + 1
		}
		if ctx.Err() != nil {
			return
		}
		if err == errCompacted {
			seen, r, rerr := h.s.rangePrefix(h.prefix)
			if rerr == nil {
				from = r + 1
				h.mu.Lock()
				h.start = from
				h.seen = seen
				close(h.resync)
				h.resync = make(chan struct{})
				h.mu.Unlock()
				continue
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// stream reads one watch stream and returns the last revision seen.
func (h *watchHub) stream(ctx context.Context, from int64) (int64, error) {
	end := prefixEnd(h.prefix)
	b, _ := json.Marshal(map[string]any{"create_request": map[string]any{"key": []byte(h.prefix), "range_end": end, "start_revision": strconv.FormatInt(from, 10)}})
	resp, done, err := h.s.hc.do(ctx, "/v3/watch", b)
	if err != nil {
		return 0, err
	}
	defer done()
	defer resp.conn.c.Close()
	if resp.status != 200 {
		return 0, fmt.Errorf("etcd %s/v3/watch: %d %s", h.s.base, resp.status, resp.text)
	}
	dec := json.NewDecoder(resp.body)
	var last int64
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
			return last, err
		}
		if m.Result.Canceled {
			if m.Result.CompactRevision != "" && m.Result.CompactRevision != "0" {
				return last, errCompacted
			}
			return last, fmt.Errorf("etcd %s: watch of %s canceled", h.s.base, h.prefix)
		}
		h.mu.Lock()
		for _, ev := range m.Result.Events {
			rev, _ := strconv.ParseInt(ev.KV.ModRevision, 10, 64)
			if rev > last {
				last = rev
			}
			key := string(ev.KV.Key)
			if ev.Type != "" && ev.Type != "PUT" {
				delete(h.seen, key)
				continue
			}
			p := seenPut{ev.KV.Value, rev}
			taken := false
			ws := h.waiters[key]
			keep := ws[:0]
			for _, w := range ws {
				if !taken && rev > w.rev {
					w.ch <- p
					taken = true
					continue
				}
				keep = append(keep, w)
			}
			if len(keep) == 0 {
				delete(h.waiters, key)
			} else {
				h.waiters[key] = keep
			}
			if !taken {
				h.seen[key] = p
			}
		}
		h.mu.Unlock()
	}
}

func (h *watchHub) drop(key string, w *hubWaiter) {
	h.mu.Lock()
	defer h.mu.Unlock()
	ws := h.waiters[key]
	for i, x := range ws {
		if x == w {
			ws = append(ws[:i], ws[i+1:]...)
			break
		}
	}
	if len(ws) == 0 {
		delete(h.waiters, key)
	} else {
		h.waiters[key] = ws
	}
	select { // delivered meanwhile: keep it for a later Take
	case p := <-w.ch:
		if _, ok := h.seen[key]; !ok {
			h.seen[key] = p
		}
	default:
	}
}

// take waits until ctx ends for a put of key after revision rev (any put
// when rev <= 0).
func (h *watchHub) take(ctx context.Context, key string, rev int64) ([]byte, error) {
	for {
		h.mu.Lock()
		if p, ok := h.seen[key]; ok && p.rev > rev {
			delete(h.seen, key)
			h.mu.Unlock()
			return p.value, nil
		}
		// seen holds every key under the prefix at the watch's start and
		// every put since: what is not there is yet to come
		w := &hubWaiter{rev: rev, ch: make(chan seenPut, 1)}
		h.waiters[key] = append(h.waiters[key], w)
		resync := h.resync
		h.mu.Unlock()
		select {
		case p := <-w.ch:
			return p.value, nil
		case <-resync:
			h.drop(key, w)
			continue
		case <-ctx.Done():
			h.drop(key, w)
			return nil, fmt.Errorf("etcd %s: %w", h.s.base, ErrStoreTimeout)
		}
	}
}

// prefixEnd is the range end of every key under prefix.
func prefixEnd(prefix string) []byte {
	end := []byte(prefix)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return []byte{0}
}

// rangePrefix reads every key under prefix: their values and revisions,
// and the store's revision of the read.
func (s *EtcdHTTP) rangePrefix(prefix string) (map[string]seenPut, int64, error) {
	var r rangeResp
	if err := s.call("/v3/kv/range", map[string]any{"key": []byte(prefix), "range_end": prefixEnd(prefix)}, &r); err != nil {
		return nil, 0, err
	}
	seen := map[string]seenPut{}
	for _, kv := range r.Kvs {
		rev, _ := strconv.ParseInt(kv.ModRevision, 10, 64)
		seen[string(kv.Key)] = seenPut{kv.Value, rev}
	}
	rev, _ := strconv.ParseInt(r.Header.Revision, 10, 64)
	return seen, rev, nil
}
