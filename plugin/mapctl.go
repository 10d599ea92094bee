package main

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/ncclbpf/ncclbpf/control"
	"github.com/ncclbpf/ncclbpf/maps"
)

// decidedWrite refuses a control-plane write of a map the tuner decides on
// (agreed, or read as rank-uniform), unless the request forces it (force).
func decidedWrite(m *maps.Map, name string, force bool) error {
	if m.Frozen() { // no write can succeed: --force would not help
		if strings.HasPrefix(m.Name(), ".rodata") {
			return fmt.Errorf("map %s is read-only: the object's constants are set when it loads; "+
				"change one with a reload (ncclbpf reload --var NAME=VALUE PID OBJ)", name)
		}
		return fmt.Errorf("map %s is read-only (frozen when the policy loaded); change it with a reload", name)
	}
	if isAgreed(m) {
		return errAgreedNeedsSeq(name)
	}
	if force {
		return nil
	}
	if b, err := runningBundle(); err == nil && b.DecidesOn(m) {
		return fmt.Errorf("map %s is read by the tuner as rank-uniform (no program writes it): "+
			"a write now reaches each rank at a different call, and ranks would decide differently; declare it agreed "+
			"(BPF_F_RDONLY_PROG) and use 'ncclbpf agree' or an agreed update with --at-seq, reload with --at-seq, "+
			"or --force to write this process alone", name)
	}
	return nil
}

// requestKey reads the key words of a lookup or delete with the map's types.
func requestKey(m *maps.Map, op, name string, args []string) ([]byte, error) {
	kv, err := maps.ParseKeyValue(m.Spec(), args)
	if err != nil {
		return nil, fmt.Errorf("map %s: %w", name, err)
	}
	if kv.Value != nil {
		return nil, fmt.Errorf("map %s: %s takes a key only", name, op)
	}
	return kv.Key, nil
}

// mapLookup answers one entry, decoded as a dump of that entry.
func mapLookup(req *control.MapLookup) *control.Response {
	m, err := runningMap(req.Map)
	if err != nil {
		return &control.Response{Error: err.Error()}
	}
	key, err := requestKey(m, req.Op(), req.Map, req.Args)
	if err != nil {
		return &control.Response{Error: err.Error()}
	}
	d, err := maps.DumpKey(m, key)
	if errors.Is(err, maps.ErrKeyNotExist) {
		return &control.Response{Error: fmt.Sprintf("map %s: no entry for key %x", req.Map, key)}
	}
	if err != nil {
		return &control.Response{Error: fmt.Sprintf("map %s: lookup: %v", req.Map, err)}
	}
	b, err := json.Marshal(d)
	if err != nil {
		return &control.Response{Error: fmt.Sprintf("map %s: lookup: %v", req.Map, err)}
	}
	return &control.Response{Dump: b}
}

// mapDelete removes one entry of a hash map.
func mapDelete(req *control.MapDelete) *control.Response {
	m, err := runningMap(req.Map)
	if err != nil {
		return &control.Response{Error: err.Error()}
	}
	key, err := requestKey(m, req.Op(), req.Map, req.Args)
	if err != nil {
		return &control.Response{Error: err.Error()}
	}
	if err := decidedWrite(m, req.Map, req.Force); err != nil {
		return &control.Response{Error: err.Error()}
	}
	if err := m.Delete(key); errors.Is(err, maps.ErrKeyNotExist) {
		return &control.Response{Error: fmt.Sprintf("map %s: no entry for key %x", req.Map, key)}
	} else if err != nil {
		return &control.Response{Error: fmt.Sprintf("map %s: delete: %v", req.Map, err)}
	}
	return &control.Response{Entries: []control.KV{{Key: hex.EncodeToString(key)}}}
}
