package main

/*
#include <stdint.h>
#include <stdlib.h>
#include "shim.h"
#include "profiler.h"
#include "reload.h"
#include "fork.h"
#include "comms.h"
*/
import "C"

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"
	"unsafe"

	"github.com/ncclbpf/ncclbpf/bundle"
	"github.com/ncclbpf/ncclbpf/control"
	"github.com/ncclbpf/ncclbpf/hook"
	"github.com/ncclbpf/ncclbpf/internal/config"
	"github.com/ncclbpf/ncclbpf/maps"

	"github.com/ncclbpf/ncclbpf/internal/envconfig"
)

// The control server (package control) starts when the library is loaded,
// on a goroutine of its own: never on an NCCL thread. NCCLBPF_CONTROL=0
// (off, false, no) disables it, ro makes it read-only (trust.go);
// NCCLBPF_CONTROL_DIR moves it. Problems are reported once on stderr, never
// to NCCL: the job runs on without a control plane.

var (
	controlStarted = time.Now()
	controlServer  *control.Server
	ctlMode        envconfig.ControlMode
)

func init() {
	mode, warn := envconfig.ParseControl(cGetenv(control.EnvControl))
	if warn != "" {
		fmt.Fprintln(os.Stderr, warn)
	}
	ctlMode = mode
	if mode == envconfig.ControlOff {
		return
	}
	go startControl()
}

func startControl() {
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(os.Stderr, "ncclbpf: control server: internal error: %v\n", r)
		}
	}()
	dir := control.DefaultDir(cGetenv)
	s, err := control.Listen(dir, os.Getpid(), handleControl)
	if err != nil {
		fmt.Fprintf(os.Stderr, "ncclbpf: no control socket (%v); set %s=0 to silence this\n", err, control.EnvControl)
		return
	}
	ln, lk := s.Descriptors()
	C.ncclbpf_control_fds(C.int(ln), C.int(lk))
	controlServer = s
	go runLedger()
	// Sockets of processes that are provably gone (their lock is free).
	go control.RemoveStale(dir)
	if err := s.Serve(); err != nil {
		fmt.Fprintf(os.Stderr, "ncclbpf: control server stopped: %v\n", err)
	}
}

// handleControl answers one request of the control socket: a payload the
// server decoded and checked (control.ParseRequest).
func handleControl(p control.Payload) *control.Response {
	switch p.(type) {
	case *control.MapUpdate, *control.MapDelete, *control.Cancel, *control.Reload, *control.Rollback,
		*control.Prepare, *control.Commit, *control.Abort:
		if err := writable(p.Op()); err != nil {
			return &control.Response{Error: err.Error()}
		}
	}
	switch req := p.(type) {
	case *control.InfoQuery:
		info := currentInfo()
		return &control.Response{Info: &info}
	case *control.StatsQuery:
		var cost []control.HookCost
		if req.SampleMS > 0 {
			c, err := sampleCost(time.Duration(req.SampleMS) * time.Millisecond)
			if err != nil {
				return &control.Response{Error: "cost sampling: " + err.Error()}
			}
			cost = c
			noteCost(c)
		}
		st := currentStats()
		st.Cost = cost
		st.Digests = commDigests()
		return &control.Response{Stats: &st}
	case *control.MapList:
		return mapList()
	case *control.MapDump:
		m, err := runningMap(req.Map)
		if err != nil {
			return &control.Response{Error: err.Error()}
		}
		d, err := maps.Dump(m)
		if err != nil {
			return &control.Response{Error: fmt.Sprintf("map %s: dump: %v", req.Map, err)}
		}
		b, err := json.Marshal(d)
		if err != nil {
			return &control.Response{Error: fmt.Sprintf("map %s: dump: %v", req.Map, err)}
		}
		return &control.Response{Dump: b}
	case *control.MapUpdate:
		return mapUpdate(req)
	case *control.MapLookup:
		return mapLookup(req)
	case *control.MapDelete:
		return mapDelete(req)
	case *control.Cancel:
		info, err := cancelPending()
		if err != nil {
			return &control.Response{Error: "cancel: " + err.Error()}
		}
		return &control.Response{Reload: &control.ReloadResult{Policy: info.Name, SHA256: info.SHA256}}
	case *control.Reload:
		if len(req.Object) > config.MaxPolicyBytes {
			return &control.Response{Error: fmt.Sprintf("reload %s: object of %d bytes, over the limit of %d; the running policy is unchanged",
				req.Name, len(req.Object), config.MaxPolicyBytes)}
		}
		if err := checkAllowed(req.Object); err != nil {
			return &control.Response{Error: fmt.Sprintf("reload %s: %v; the running policy is unchanged", req.Name, err)}
		}
		return controlReload(req, false)
	case *control.Rollback:
		return controlReload(&control.Reload{Vars: req.Vars, AtSeq: req.AtSeq, CommAtSeq: req.CommAtSeq, TimeoutMS: req.TimeoutMS}, true)
	case *control.MapRead:
		return mapRead(req.Map)
	case *control.AgreedUpdate:
		return agreedUpdate(req)
	case *control.DecisionsQuery:
		return &control.Response{Decisions: decisionRecords(true)}
	case *control.MetricsQuery:
		return &control.Response{Metrics: currentMetrics()}
	case *control.LedgerQuery:
		return ledgerView(req)
	case *control.Prepare:
		return prepareSwitch(req)
	case *control.Commit:
		return commitSwitch(req.Tx)
	case *control.Abort:
		return abortSwitch(req.Tx)
	}
	return &control.Response{Error: "unknown op " + p.Op()}
}

func currentInfo() control.Info {
	mu.Lock()
	b := current
	mu.Unlock()
	exe, _ := os.Executable()
	stateMu.Lock()
	defer stateMu.Unlock()
	info := control.Info{PID: os.Getpid(), Exe: exe, Started: controlStarted, Running: b != nil,
		LoadMessage: C.GoString(C.ncclbpf_load_message())}
	if b != nil {
		info.Policy, info.SHA256, info.Size, info.LoadedAt = running.Name, running.SHA256, running.Size, running.LoadedAt
		info.Attached = describe(b)
	}
	if pending != nil {
		s := pending.AtSeq
		info.PendingAtSeq = &s
	}
	info.Comms = liveComms()
	info.Control = ctlMode.String()
	return info
}

func currentStats() control.Stats {
	st := control.Stats{Info: currentInfo()}
	var ts C.struct_ncclbpf_tuner_stats
	C.ncclbpf_tuner_get_stats(&ts)
	st.Tuner = control.TunerStats{CommsLive: uint64(ts.comms_live), CommsTotal: uint64(ts.comms_total),
		Calls: uint64(ts.calls), PolicyCalls: uint64(ts.policy_calls), Applied: uint64(ts.applied),
		Rejected: uint64(ts.rejected), Clamped: uint64(ts.clamped), ChunkCalls: uint64(ts.chunk_calls),
		ChunkApplied: uint64(ts.chunk_applied), ChunkRejected: uint64(ts.chunk_rejected), LoadStatus: int(ts.load_status)}
	var lo, hi C.uint64_t
	if C.ncclbpf_comms_seq_range(&lo, &hi) > 0 {
		st.Tuner.SeqMin, st.Tuner.SeqMax = uint64(lo), uint64(hi)
	}
	var ps C.struct_ncclbpf_prof_stats
	C.ncclbpf_prof_get_stats(&ps)
	st.Profiler = control.ProfilerStats{Calls: map[string]uint64{}, EventsDropped: uint64(ps.events_dropped),
		EventsForced: uint64(ps.events_forced), Orphans: uint64(ps.orphans), Contexts: uint64(ps.contexts),
		Version: int(ps.version), Mask: int(ps.mask)}
	for _, name := range hook.ProfilerHookNames {
		cname := C.CString(name)
		id := C.ncclbpf_prof_hook_id(cname)
		C.free(unsafe.Pointer(cname))
		if id >= 0 && id <= C.NCCLBPF_PROF_LAST_HOOK {
			st.Profiler.Calls[name] = uint64(ps.calls[id])
		}
	}
	stateMu.Lock()
	st.Reload = control.ReloadStats{Reloads: rstats.Reloads, Failures: rstats.Failures, LastError: rstats.LastError,
		LastPublishNS: rstats.LastPublish.Nanoseconds(), MaxPublishNS: rstats.MaxPublish.Nanoseconds(),
		LastGraceNS: rstats.LastGrace.Nanoseconds(), Leaked: rstats.Leaked, ForcedActivations: rstats.ForcedActive,
		LastActivated: rstats.LastActivated, LiveBundles: liveBundles.Load()}
	if !initialCounted && st.Info.Running {
		st.Reload.LiveBundles++
	}
	if previous != nil {
		st.Reload.Previous = previous.Name + " (sha256 " + previous.SHA256[:12] + ")"
	}
	stateMu.Unlock()
	return st
}

func runningBundle() (*bundle.Bundle, error) {
	mu.Lock()
	defer mu.Unlock()
	if current == nil {
		return nil, errors.New("no policy is running")
	}
	return current, nil
}

func runningMap(name string) (*maps.Map, error) {
	b, err := runningBundle()
	if err != nil {
		return nil, err
	}
	m := b.Map(name)
	if m == nil {
		var names []string
		for _, m := range b.Maps {
			names = append(names, m.Name())
		}
		return nil, fmt.Errorf("map %q: no such map in %s (have: %v)", name, b.Name, names)
	}
	return m, nil
}

func mapList() *control.Response {
	b, err := runningBundle()
	if err != nil {
		return &control.Response{Error: err.Error()}
	}
	var out []control.MapInfo
	for _, m := range b.Maps {
		s := m.Spec()
		out = append(out, control.MapInfo{Name: s.Name, Type: s.Type.String(), KeySize: s.KeySize,
			ValueSize: s.ValueSize, MaxEntries: s.MaxEntries, Frozen: m.Frozen(), Agreed: isAgreed(m)})
	}
	return &control.Response{Maps: out}
}

func mapUpdate(req *control.MapUpdate) *control.Response {
	m, err := runningMap(req.Map)
	if err != nil {
		return &control.Response{Error: err.Error()}
	}
	key, val, err := updateEntry(m, req)
	if err != nil {
		return &control.Response{Error: err.Error()}
	}
	if err := decidedWrite(m, req.Map, req.Force); err != nil {
		return &control.Response{Error: err.Error()}
	}
	if err := m.Update(key, val, 0); err != nil {
		return &control.Response{Error: fmt.Sprintf("map %s: update: %v", req.Map, err)}
	}
	resp := &control.Response{Entries: []control.KV{{Key: hex.EncodeToString(key), Value: hex.EncodeToString(val)}}}
	// The entry as written, decoded with the map's types (as a lookup
	// answers), so that the CLI shows it as the user typed it.
	if d, err := maps.DumpKey(m, key); err == nil {
		resp.Dump, _ = json.Marshal(d)
	}
	return resp
}

// updateEntry reads the key and value of a map_update: raw hex, or the
// words a user typed, read with the map's BTF types.
func updateEntry(m *maps.Map, req *control.MapUpdate) (key, val []byte, err error) {
	if len(req.Args) > 0 {
		kv, err := maps.ParseKeyValue(m.Spec(), req.Args)
		if err != nil {
			return nil, nil, fmt.Errorf("map %s: %w", req.Map, err)
		}
		if kv.Value == nil {
			return nil, nil, fmt.Errorf("map %s: update needs a value (KEY VALUE, or key DATA value DATA)", req.Map)
		}
		return kv.Key, kv.Value, nil
	}
	if key, err = hex.DecodeString(req.Key); err != nil {
		return nil, nil, fmt.Errorf("map %s: key: %v (want hex bytes)", req.Map, err)
	}
	if val, err = hex.DecodeString(req.Value); err != nil {
		return nil, nil, fmt.Errorf("map %s: value: %v (want hex bytes)", req.Map, err)
	}
	return key, val, nil
}

// controlReload reloads req.Object, or with rollback the object that ran
// before the last reload, at req's activation point.
func controlReload(req *control.Reload, rollback bool) *control.Response {
	r := reloadRequest{Name: req.Name, Object: req.Object, AtSeq: req.AtSeq,
		Timeout: time.Duration(req.TimeoutMS) * time.Millisecond}
	if len(req.CommAtSeq) > 0 {
		r.CommAt = map[uint64]uint64{}
		for k, v := range req.CommAtSeq {
			id, err := control.ParseCommKey(k)
			if err != nil {
				return &control.Response{Error: "reload: comm_at_seq: " + err.Error()}
			}
			r.CommAt[id] = v
		}
	}
	if rollback {
		stateMu.Lock()
		p := previous
		stateMu.Unlock()
		if p == nil {
			return &control.Response{Error: "rollback: no earlier policy object to go back to"}
		}
		r.Name, r.Object = p.Name, p.obj
	}
	if r.Name == "" {
		r.Name = "reloaded policy"
	}
	if req.Vars != "" {
		vars, err := config.ParseVars(req.Vars)
		if err != nil {
			return &control.Response{Error: fmt.Sprintf("reload %s: vars: %v", r.Name, err)}
		}
		for _, v := range vars {
			r.Vars = append(r.Vars, bundle.Var{Name: v.Name, Value: v.Value})
		}
	}
	if r.AtSeq != nil {
		r.epoch = epochName("reload", r.Object, *r.AtSeq)
	}
	res, err := reloadPolicy(r)
	if err != nil {
		return &control.Response{Error: err.Error()}
	}
	return &control.Response{Reload: &control.ReloadResult{Policy: r.Name, SHA256: res.SHA256, Attached: res.Attached,
		Reused: res.Reused, LoadNS: res.Load.Nanoseconds(), PublishNS: res.Publish.Nanoseconds(),
		GraceNS: res.Grace.Nanoseconds(), Pending: res.Pending, AtSeq: res.AtSeq}}
}

// liveComms lists the live communicators (at most control.MaxCommsListed).
func liveComms() []control.CommInfo {
	var buf [control.MaxCommsListed]C.struct_ncclbpf_comm_info
	n := int(C.ncclbpf_comms_list(&buf[0], C.int(len(buf))))
	out := make([]control.CommInfo, 0, min(n, len(buf)))
	for i := 0; i < n && i < len(buf); i++ {
		c := buf[i]
		out = append(out, control.CommInfo{ID: uint64(c.comm_id), Ranks: uint32(c.n_ranks), Nodes: uint32(c.n_nodes), Seq: uint64(c.seq)})
	}
	return out
}
