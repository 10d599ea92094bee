package main

import (
	"fmt"
	"os"

	"github.com/ncclbpf/ncclbpf/nccl"
)

// loadPolicy reads the configuration, loads the policy and publishes its
// entries. It never panics: any failure leaves the slots empty (NCCL's
// defaults) and is described in the message.
func loadPolicy() (status int, msg string) {
	defer func() {
		if r := recover(); r != nil {
			status, msg = -1, fmt.Sprintf("ncclbpf: internal error while loading the policy: %v; NCCL's default tuning stays in effect", r)
		}
	}()
	cfg, err := nccl.ConfigFromEnv(os.Getenv)
	if err != nil {
		return -1, fmt.Sprintf("ncclbpf: %v; NCCL's default tuning stays in effect", err)
	}
	if cfg.Policy == "" {
		return 1, "ncclbpf: no policy (" + nccl.EnvPolicy + "=none): NCCL's default tuning"
	}
	return -1, fmt.Sprintf("ncclbpf: policy %s: the eBPF pipeline is not built into this library yet; NCCL's default tuning stays in effect", cfg.Policy)
}
