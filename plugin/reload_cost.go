package main

/*
#include <stdint.h>
#include <stdlib.h>
#include "shim.h"
#include "profiler.h"
#include "reload.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"time"
	"unsafe"

	"github.com/ncclbpf/ncclbpf/control"
	"github.com/ncclbpf/ncclbpf/hook"
)

// sampleCost measures the running programs for window: each hook's program
// is wrapped in a timing trampoline (reload_cost.c) that times one call in
// 64 per thread, then put back. Nothing is timed outside such a window: the
// shim's hot path has no timing code. Reloads wait meanwhile.
func sampleCost(window time.Duration) ([]control.HookCost, error) {
	if window <= 0 || window > time.Minute {
		return nil, fmt.Errorf("cost sampling window %v: want (0, 1m]", window)
	}
	if !reloadMu.TryLock() {
		return nil, errReloadBusy
	}
	defer reloadMu.Unlock()
	C.ncclbpf_ensure_loaded()
	type wrapped struct {
		rec  int
		hook string
		pub  published // the program's own record, put back after the window
		prof C.int     // profiler hook id, or -1 for a tuner slot
	}
	var ws []wrapped
	mu.Lock()
	b := current
	if b == nil {
		mu.Unlock()
		return nil, errors.New("no policy is running")
	}
	for i, h := range []string{hook.Tuner, hook.TunerChunkSize} {
		p := b.Program(h)
		if p == nil {
			continue
		}
		r, err := publishedRecord(h, p)
		if err != nil {
			continue
		}
		timed := r // the same hints, the trampoline's entry
		timed.entry = C.ncclbpf_cost_wrap(C.int(i), r.entry)
		slot := slotTuner
		if i == 1 {
			slot = slotChunkSize
		}
		publish(slot, slotWord(timed))
		ws = append(ws, wrapped{i, h, r, -1})
	}
	for _, name := range hook.ProfilerHookNames {
		p := b.Program(name)
		if p == nil || p.Entry() == 0 {
			continue
		}
		cname := C.CString(name)
		id := C.ncclbpf_prof_hook_id(cname)
		C.free(unsafe.Pointer(cname))
		if id < C.NCCLBPF_PROF_FIRST_HOOK || id > C.NCCLBPF_PROF_LAST_HOOK {
			continue
		}
		rec := 1 + int(id)
		r, _ := publishedRecord(name, p) // a profiler record has no error
		timed := r
		timed.entry = C.ncclbpf_cost_wrap(C.int(rec), r.entry)
		C.ncclbpf_prof_publish_record(id, &timed)
		ws = append(ws, wrapped{rec, name, r, id})
	}
	mu.Unlock()
	c0, t0 := C.ncclbpf_rdtsc(), time.Now()
	time.Sleep(window)
	c1, el := C.ncclbpf_rdtsc(), time.Since(t0)
	mu.Lock()
	for _, w := range ws {
		switch {
		case w.prof >= 0:
			C.ncclbpf_prof_publish_record(w.prof, &w.pub)
		case w.rec == 0:
			publish(slotTuner, slotWord(w.pub))
		default:
			publish(slotChunkSize, slotWord(w.pub))
		}
	}
	mu.Unlock()
	// The trampolines are static code: nothing to free; the grace period
	// only makes the counts final.
	C.ncclbpf_slot_synchronize()
	profSync()
	perNS := float64(c1-c0) / float64(el.Nanoseconds())
	out := []control.HookCost{}
	for _, w := range ws {
		var n, cyc, max C.uint64_t
		C.ncclbpf_cost_read(C.int(w.rec), &n, &cyc, &max)
		hc := control.HookCost{Hook: w.hook, Samples: uint64(n), WindowMS: el.Milliseconds()}
		if n > 0 && perNS > 0 {
			hc.MeanNS = float64(cyc) / float64(n) / perNS
			hc.MaxNS = float64(max) / perNS
		}
		out = append(out, hc)
	}
	return out, nil
}
