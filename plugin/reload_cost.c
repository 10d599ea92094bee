/* SPDX-License-Identifier: MIT */
/*
 * reload_cost.c: on-demand cost sampling of the programs in the hook slots.
 *
 * The shim's hot path keeps no timing. To measure, the control plane wraps a slot's program in a
 * timing trampoline for a while (ncclbpf_cost_wrap), then puts the program back
 * (ncclbpf_cost_unwrap) and, after a grace period, reads the record. The trampoline has the
 * program ABI, so the shim runs it between nb_enter and nb_leave like any program. It times one
 * call in NB_COST_EVERY per thread (a thread-local counter: no shared write on untimed calls) with
 * the TSC; the control plane converts cycles to time. Only the sampled calls pay for the shared
 * counters, and only while a measurement runs.
 */
#include <stdatomic.h>
#include <stdint.h>
#include "clock.h"

#include "ncclbpf.h"
#include "internal.h"
#include "reload.h"

#define NB_COST_EVERY 64

struct nb_cost {
	_Atomic(uintptr_t) inner;
	_Atomic uint64_t samples, cycles, max_cycles;
};

static struct nb_cost nb_costs[NCCLBPF_COST_RECORDS];
static __thread uint32_t nb_cost_tick __attribute__((tls_model("initial-exec")));

static inline uint64_t nb_cost_call(struct nb_cost *r, void *ctx) {
	ncclbpf_prog_fn fn = (ncclbpf_prog_fn)atomic_load_explicit(&r->inner, memory_order_relaxed);
	if (__builtin_expect(++nb_cost_tick % NB_COST_EVERY != 0, 1))
		return fn(ctx);
	uint64_t t0 = nb_cycles();
	uint64_t rc = fn(ctx);
	uint64_t d = nb_cycles() - t0;
	atomic_fetch_add_explicit(&r->samples, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&r->cycles, d, memory_order_relaxed);
	uint64_t m = atomic_load_explicit(&r->max_cycles, memory_order_relaxed);
	while (d > m && !atomic_compare_exchange_weak_explicit(&r->max_cycles, &m, d, memory_order_relaxed,
	                                                       memory_order_relaxed))
		;
	return rc;
}

#define NB_COST_TRAMP(i)                                                                                              \
	__attribute__((aligned(16))) static uint64_t nb_cost_tramp_##i(void *ctx) { return nb_cost_call(&nb_costs[i], ctx); }
NB_COST_TRAMP(0)
NB_COST_TRAMP(1)
NB_COST_TRAMP(2)
NB_COST_TRAMP(3)
NB_COST_TRAMP(4)
NB_COST_TRAMP(5)
_Static_assert(NCCLBPF_COST_RECORDS == 6, "one trampoline per record");

static const ncclbpf_prog_fn nb_cost_tramps[NCCLBPF_COST_RECORDS] = {
    nb_cost_tramp_0, nb_cost_tramp_1, nb_cost_tramp_2, nb_cost_tramp_3, nb_cost_tramp_4, nb_cost_tramp_5};

uintptr_t ncclbpf_cost_wrap(int rec, uintptr_t entry) {
	if (rec < 0 || rec >= NCCLBPF_COST_RECORDS || entry == 0)
		return 0;
	struct nb_cost *r = &nb_costs[rec];
	atomic_store_explicit(&r->inner, entry, memory_order_relaxed);
	atomic_store_explicit(&r->samples, 0, memory_order_relaxed);
	atomic_store_explicit(&r->cycles, 0, memory_order_relaxed);
	atomic_store_explicit(&r->max_cycles, 0, memory_order_relaxed);
	return (uintptr_t)nb_cost_tramps[rec]; /* the caller publishes it (a release) */
}

void ncclbpf_cost_read(int rec, uint64_t *samples, uint64_t *cycles, uint64_t *max_cycles) {
	*samples = *cycles = *max_cycles = 0;
	if (rec < 0 || rec >= NCCLBPF_COST_RECORDS)
		return;
	*samples = atomic_load(&nb_costs[rec].samples);
	*cycles = atomic_load(&nb_costs[rec].cycles);
	*max_cycles = atomic_load(&nb_costs[rec].max_cycles);
}

uint64_t ncclbpf_rdtsc(void) { return nb_cycles(); }
