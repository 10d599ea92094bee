//go:build ncclbpf_testing

/* SPDX-License-Identifier: MIT */
/* testing.c: entry points for tests and benchmarks of the shim, in test builds only (go build -tags
 * ncclbpf_testing); the production library exports none of them. */
#include "shim.h"

/* ncclbpf_testing_set_program publishes fn in slot: an entry aligned to 8 bytes (the low 3 bits of a
 * slot word are NCCLBPF_SLOT_* hints, which fn may carry). */
void ncclbpf_testing_set_program(int slot, uintptr_t fn) {
	ncclbpf_ensure_loaded(); /* as the first init would: the load must not overwrite fn afterwards */
	ncclbpf_slot_publish(slot, fn);
}
