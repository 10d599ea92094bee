package main

import (
	"fmt"
	"os"
	"time"

	"github.com/ncclbpf/ncclbpf/control"
	"github.com/ncclbpf/ncclbpf/internal/envconfig"
)

// With NCCLBPF_STORE set, the process also registers in the job's store
// and serves control requests that arrive there (control/store.go), on a
// goroutine of its own: agree, reload --all and check then reach every
// rank of a multi-node job. A store that is down or slow costs nothing
// but one warning on stderr: NCCL runs on, and no switch can be prepared
// through the store until it answers again.

func init() {
	url := cGetenv(control.EnvStore)
	if url == "" || ctlMode == envconfig.ControlOff {
		return
	}
	go runStoreAgent(url)
}

func runStoreAgent(url string) {
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(os.Stderr, "ncclbpf: job store: internal error: %v\n", r)
		}
	}()
	prefix := control.JobPrefix("", cGetenv)
	warned := false
	say := func(err error) {
		fmt.Fprintf(os.Stderr, "ncclbpf: job store %s: %v; NCCL runs on, switches through the store wait for it\n", url, err)
	}
	warn := func(err error) { // one warning per outage
		if !warned {
			say(err)
			warned = true
		}
	}
	for {
		kv, err := control.OpenStore(url, cGetenv, 5*time.Second)
		if err == nil {
			var reg control.Registration
			if reg, err = control.Register(kv, prefix, cGetenv); err == nil {
				warned = false
				// ServeStore warns once per outage of its own.
				err = control.ServeStore(kv, prefix, reg.Slot, handleControl, nil, say)
			}
			kv.Close()
		}
		if err != nil {
			warn(err) // ErrLost included: register again
		}
		time.Sleep(2 * time.Second)
	}
}
