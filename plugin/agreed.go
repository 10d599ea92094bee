package main

import (
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"github.com/ncclbpf/ncclbpf/bundle"
	"github.com/ncclbpf/ncclbpf/control"
	"github.com/ncclbpf/ncclbpf/maps"
)

// Agreed maps (include/ncclbpf.h, NCCLBPF_AGREED): maps declared with
// BPF_F_RDONLY_PROG. Programs only read them; the control plane writes them
// only at an agreed call sequence, so that every rank of a communicator
// sees the same contents on the same call:
//
//   - an agreed update reloads the running object (same bytes, same
//     load options) with fresh copies of its agreed maps, filled with the
//     current contents plus the update, every other map taken over as a
//     hot reload does; the new bundle is armed at AtSeq by the at-seq
//     reload machinery (reload.c): calls with call_seq < AtSeq run the old
//     programs on the old copies, later calls the new ones. No Go code and
//     no lock on NCCL's threads; the switch is one slot word;
//   - a plain map update of an agreed map is refused unless forced.

// isAgreed reports whether m is an agreed map: read-only for programs and
// not a global data section (.rodata is read-only for programs too, but
// frozen and set at load time).
func isAgreed(m *maps.Map) bool {
	return m.ReadOnlyForPrograms() && !m.Frozen() && !strings.HasPrefix(m.Name(), ".")
}

// errAgreedNeedsSeq is the refusal of an agreed map write without an
// activation point, forced or not: a write to one process alone would make
// the ranks decide differently.
func errAgreedNeedsSeq(name string) error {
	return fmt.Errorf("map %s is an agreed map (BPF_F_RDONLY_PROG): it changes only at an agreed call sequence, "+
		"on every rank or none, even with --force; use 'ncclbpf agree --at-seq N' (two-phase: every rank switches at the same collective)", name)
}

// agreedBytes is what names an agreed update's epoch: its entries.
func agreedBytes(kvs []control.KV) []byte {
	var b []byte
	for _, kv := range kvs {
		b = append(b, kv.Key...)
		b = append(b, '=')
		b = append(b, kv.Value...)
		b = append(b, ';')
	}
	return b
}

func mapRead(name string) *control.Response {
	m, err := runningMap(name)
	if err != nil {
		return &control.Response{Error: err.Error()}
	}
	var out []control.KV
	err = m.Iterate(func(k, v []byte) bool {
		out = append(out, control.KV{Key: hex.EncodeToString(k), Value: hex.EncodeToString(v)})
		return true
	})
	if err != nil {
		return &control.Response{Error: fmt.Sprintf("map %s: read: %v", name, err)}
	}
	s := m.Spec()
	return &control.Response{Entries: out, MapSpec: &control.MapInfo{Name: s.Name, Type: s.Type.String(),
		KeySize: s.KeySize, ValueSize: s.ValueSize, MaxEntries: s.MaxEntries, Frozen: m.Frozen(), Agreed: isAgreed(m)}}
}

type rawKV struct{ k, v []byte }

func decodeEntries(m *maps.Map, kvs []control.KV) ([]rawKV, error) {
	s := m.Spec()
	out := make([]rawKV, 0, len(kvs))
	for i, kv := range kvs {
		k, err := hex.DecodeString(kv.Key)
		if err != nil || len(k) != int(s.KeySize) {
			return nil, fmt.Errorf("map %s: entry %d: key %q: want %d bytes in hex", s.Name, i, kv.Key, s.KeySize)
		}
		v, err := hex.DecodeString(kv.Value)
		if err != nil || len(v) != int(s.ValueSize) {
			return nil, fmt.Errorf("map %s: entry %d: value %q: want %d bytes in hex", s.Name, i, kv.Value, s.ValueSize)
		}
		out = append(out, rawKV{k, v})
	}
	return out, nil
}

func agreedUpdate(req *control.AgreedUpdate) *control.Response {
	m, err := runningMap(req.Map)
	if err != nil {
		return &control.Response{Error: err.Error()}
	}
	if !isAgreed(m) {
		return &control.Response{Error: fmt.Sprintf("map %s is not an agreed map: declare it with NCCLBPF_AGREED "+
			"(map_flags BPF_F_RDONLY_PROG), or write it with map_update", req.Map)}
	}
	kvs, err := decodeEntries(m, req.Entries)
	if err != nil {
		return &control.Response{Error: err.Error()}
	}
	if req.AtSeq == nil {
		return &control.Response{Error: errAgreedNeedsSeq(req.Map).Error()}
	}
	stateMu.Lock()
	cur := running
	stateMu.Unlock()
	if cur.obj == nil {
		return &control.Response{Error: "agreed update: the running policy is a builtin or unknown object; nothing to reload"}
	}
	target := req.Map
	r := reloadRequest{Name: cur.Name, Object: cur.obj, Vars: cur.vars, Data: cur.data, AtSeq: req.AtSeq,
		Timeout:    time.Duration(req.TimeoutMS) * time.Millisecond,
		sameObject: true,
		epoch:      epochName("agree "+req.Map, agreedBytes(req.Entries), *req.AtSeq),
		fresh:      func(m *maps.Map) bool { return isAgreed(m) },
		prepare:    func(nb, old *bundle.Bundle) error { return fillAgreed(nb, old, target, kvs) }}
	res, err := reloadPolicy(r)
	if err != nil {
		return &control.Response{Error: fmt.Sprintf("agreed update of map %s: %v", req.Map, err)}
	}
	return &control.Response{Reload: &control.ReloadResult{Policy: cur.Name, SHA256: res.SHA256, Attached: res.Attached,
		Reused: res.Reused, LoadNS: res.Load.Nanoseconds(), PublishNS: res.Publish.Nanoseconds(),
		GraceNS: res.Grace.Nanoseconds(), Pending: res.Pending, AtSeq: res.AtSeq}}
}

// fillAgreed copies every agreed map of old into nb's fresh copy, then
// writes kvs into nb's map target. nb is not published yet: no program
// runs on its maps.
func fillAgreed(nb, old *bundle.Bundle, target string, kvs []rawKV) error {
	for _, m := range nb.Maps {
		if !isAgreed(m) {
			continue
		}
		var om *maps.Map
		if old != nil {
			om = old.Map(m.Name())
		}
		if om == nil || om == m {
			continue
		}
		var ierr error
		err := om.Iterate(func(k, v []byte) bool {
			ierr = m.Update(k, v, maps.UpdateAny)
			return ierr == nil
		})
		if err == nil {
			err = ierr
		}
		if err != nil {
			return fmt.Errorf("agreed map %s: copying the current contents: %w", m.Name(), err)
		}
	}
	t := nb.Map(target)
	if t == nil {
		return fmt.Errorf("agreed map %s: not in the reloaded bundle", target)
	}
	for _, kv := range kvs {
		if err := t.Update(kv.k, kv.v, maps.UpdateAny); err != nil {
			return fmt.Errorf("agreed map %s: update: %w", target, err)
		}
	}
	return nil
}
