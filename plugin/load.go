package main

/*
#include <stdlib.h>
#include "shim.h"
#include "profiler.h"
*/
import "C"

import (
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/ncclbpf/ncclbpf/bundle"
	"github.com/ncclbpf/ncclbpf/hook"
	"github.com/ncclbpf/ncclbpf/internal/config"
	"github.com/ncclbpf/ncclbpf/internal/tuner"
	"github.com/ncclbpf/ncclbpf/loader"
	"github.com/ncclbpf/ncclbpf/maps"
	"github.com/ncclbpf/ncclbpf/policies"
)

var (
	// mu guards current; the hot path never takes it.
	mu sync.Mutex
	// current is the bundle whose code the slots point at. It stays
	// referenced (its code mapped) for as long as it may run.
	current *bundle.Bundle
)

// loadPolicy reads the configuration, loads the policy and publishes its
// entries. It never panics: any failure leaves the slots empty (NCCL's
// defaults) and is described in the message, one line. strict reports
// NCCLBPF_STRICT: a failure then makes the library's inits fail.
func loadPolicy() (status int, msg string, strict bool) {
	strict, serr := config.StrictFromEnv(cGetenv)
	failed := func(what string) (int, string, bool) {
		if strict {
			return -1, what + "; " + config.EnvStrict + " is set: the library's init fails", true
		}
		return -1, what + "; NCCL's default tuning stays in effect", false
	}
	defer func() {
		if r := recover(); r != nil {
			status, msg, strict = failed(fmt.Sprintf("ncclbpf: internal error while loading the policy: %v", r))
		}
	}()
	if serr != nil {
		return failed("ncclbpf: " + serr.Error() + " (taken as 1): the policy is not loaded")
	}
	cfg, err := config.ConfigFromEnv(cGetenv)
	if err != nil {
		return failed(fmt.Sprintf("ncclbpf: %v", err))
	}
	for _, w := range cfg.Warnings {
		fmt.Fprintln(os.Stderr, w)
	}
	if cfg.Policy == "" {
		return 1, "ncclbpf: no policy (" + config.EnvPolicy + "=none): NCCL's default tuning", strict
	}
	start := time.Now()
	b, notes, err := loadBundle(cfg)
	if err != nil {
		return failed(fmt.Sprintf("ncclbpf: policy %v", err))
	}
	attached, err := publishBundle(b)
	if err != nil {
		b.Close()
		return failed(fmt.Sprintf("ncclbpf: policy %s: %v", cfg.Policy, err))
	}
	msg = fmt.Sprintf("ncclbpf: policy %s loaded in %.1f ms: %s", cfg.Policy,
		float64(time.Since(start).Microseconds())/1000, attached)
	for _, n := range notes {
		msg += "; " + n
	}
	return 0, msg, strict
}

// cGetenv reads the C environment. os.Getenv would not do: a c-shared Go
// runtime copies the environment once, when the library is loaded, and
// misses variables the process sets afterwards (Python's os.environ in a
// PyTorch job, a launcher's setenv before NCCL's init).
func cGetenv(name string) string {
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	v := C.getenv(cname)
	if v == nil {
		return ""
	}
	return C.GoString(v)
}

// loadBundle reads, verifies and compiles the configured policy. The notes
// say what became of the rules settings, for the load message.
func loadBundle(cfg config.Config) (*bundle.Bundle, []string, error) {
	var obj []byte
	if name := cfg.Builtin(); name != "" {
		o, ok := policies.Object(name)
		if !ok {
			return nil, nil, fmt.Errorf("%s: no such builtin policy (have: %s)", cfg.Policy, strings.Join(policies.Names(), ", "))
		}
		obj = o
	} else {
		o, err := config.ReadRegularFile(cfg.Policy, config.MaxPolicyBytes)
		if err != nil {
			return nil, nil, err
		}
		obj = o
	}
	noteInitial(cfg.Policy, obj) // the control plane reports its name and hash (reload.go)
	spec, err := loader.LoadBytes(obj)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", cfg.Policy, err)
	}
	opts := bundle.Options{Name: cfg.Policy, RequireNative: true}
	for _, v := range cfg.Vars {
		opts.Vars = append(opts.Vars, bundle.Var{Name: v.Name, Value: v.Value})
	}
	data, vars, notes, err := rulesSettings(spec, cfg)
	if err != nil {
		return nil, nil, err
	}
	opts.Data = data
	opts.Vars = append(opts.Vars, vars...)
	noteInitialOptions(opts.Vars, opts.Data)
	b, err := bundle.LoadSpec(spec, opts)
	return b, notes, err
}

// rulesSettings turns the rules settings into load options for spec
// (config.Config.Rules, which `ncclbpf run` shares): the rule table for a
// policy that has one (tuner.RulesVar), and its match-logging switch when
// NCCLBPF_RULES_LOG asks for it.
func rulesSettings(spec *loader.CollectionSpec, cfg config.Config) (map[string][]byte, []bundle.Var, []string, error) {
	r, err := cfg.Rules(func(name string) bool { return spec.Variable(name) != nil }, "")
	if err != nil || r.Table == nil {
		return nil, nil, r.Notes, err
	}
	var vars []bundle.Var
	if r.Log {
		vars = append(vars, bundle.Var{Name: tuner.RulesLogVar, Value: 1})
	}
	return map[string][]byte{tuner.RulesVar: r.Table}, vars, r.Notes, nil
}

// publishBundle points the shim's slots at b's programs and describes what
// it attached. Hooks b has no program for are emptied.
func publishBundle(b *bundle.Bundle) (string, error) {
	return publishWith(b, func(tuner, chunk uintptr) error {
		publish(slotTuner, tuner)
		publish(slotChunkSize, chunk)
		return nil
	})
}

// publishWith makes b the current bundle: with mu held, it hands the
// words of the tuner slots (slotWord of their programs' records) to
// setTuner (which points the slots at them, at once or through a
// trampoline), then publishes b's profiler programs and the bpf_printk
// sink. It describes what it attached.
func publishWith(b *bundle.Bundle, setTuner func(tuner, chunk uintptr) error) (string, error) {
	mu.Lock()
	defer mu.Unlock()
	tr, err := publishedRecord(hook.Tuner, b.Program(hook.Tuner))
	if err != nil {
		return "", err
	}
	cr, err := publishedRecord(hook.TunerChunkSize, b.Program(hook.TunerChunkSize))
	if err != nil {
		return "", err
	}
	if err := setTuner(slotWord(tr), slotWord(cr)); err != nil {
		return "", err
	}
	parts := publishProfiler(b)
	// bpf_printk lines go to NCCL's logger (rate-limited by package maps).
	maps.SetLogSinkC(uintptr(C.ncclbpf_printk_sink()), 0)
	current = b
	sort.Strings(parts)
	return strings.Join(parts, ", "), nil
}

// publishProfiler points every profiler slot, and every net slot
// (publishNet), at b's program for its hook (0 where b has none), with its
// record (publishedRecord), and refreshes NCCL's activation mask; it returns the
// "hook=program" parts of every program of b. Each slot is written once,
// straight from the old entry to the new one: an event that completes
// during a reload runs either policy's program, never none (emptying all
// slots first would let such events go uncounted). Caller holds mu.
func publishProfiler(b *bundle.Bundle) []string {
	var recs [C.NCCLBPF_PROF_LAST_HOOK + 1]published
	var parts []string
	for _, p := range b.Programs {
		cname := C.CString(p.Hook.Name)
		id := C.ncclbpf_prof_hook_id(cname)
		C.free(unsafe.Pointer(cname))
		if id >= C.NCCLBPF_PROF_FIRST_HOOK && id <= C.NCCLBPF_PROF_LAST_HOOK {
			recs[id], _ = publishedRecord(p.Hook.Name, p) // a profiler record has no error
		}
		parts = append(parts, fmt.Sprintf("%s=%s", p.Hook.Name, p.Name))
	}
	for id := C.NCCLBPF_PROF_FIRST_HOOK; id <= C.NCCLBPF_PROF_LAST_HOOK; id++ {
		C.ncclbpf_prof_publish_record(C.int(id), &recs[id])
	}
	C.ncclbpf_prof_refresh_mask()
	publishNet(b)
	return parts
}
