/* SPDX-License-Identifier: MIT */
/*
 * clock.h: the shim's clocks, one place for every reader (tuner, profiler, net, reload cost).
 *
 *   nb_mono_ns     CLOCK_MONOTONIC in ns: event times the programs read (profiler start/end).
 *   nb_coarse_ns   CLOCK_MONOTONIC_COARSE in ns: a few ns to read, for ages and rate windows; its
 *                  resolution (a kernel tick) is nb_coarse_res_ns, to be added to an age that must
 *                  not be reached early.
 *   nb_ticks       the cheapest clock for timing a request (net): the cycle counter on x86-64, else
 *                  nb_mono_ns; nb_ticks_ns converts a reading to CLOCK_MONOTONIC ns with the factor
 *                  calibrated when the library loads (clock.c).
 *   nb_cycles      the raw cycle counter (x86 TSC, Arm's CNTVCT_EL0), unconverted: the control plane
 *                  converts cycles to time (reload cost sampling).
 *
 * All inline: they are read on NCCL's threads and cost what the instruction or vDSO call costs.
 */
#ifndef NCCLBPF_CLOCK_H
#define NCCLBPF_CLOCK_H

#include <stdint.h>
#include <time.h>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#define NB_CLOCK_HIDDEN __attribute__((visibility("hidden")))

static inline uint64_t nb_clock_ns(clockid_t id) {
	struct timespec ts;
	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline uint64_t nb_mono_ns(void) { return nb_clock_ns(CLOCK_MONOTONIC); }
static inline uint64_t nb_coarse_ns(void) { return nb_clock_ns(CLOCK_MONOTONIC_COARSE); }

/* The coarse clock's resolution in ns (clock.c; 10 ms until the library's constructor ran). */
extern uint64_t nb_coarse_res_ns NB_CLOCK_HIDDEN;

#if defined(__x86_64__)
static inline uint64_t nb_cycles(void) { return __rdtsc(); }
#elif defined(__aarch64__)
/* The generic timer's virtual count (CNTVCT_EL0), readable from user space on Linux; the ISB
 * keeps the read from being hoisted above the code it times. */
static inline uint64_t nb_cycles(void) {
	uint64_t v;
	__asm__ volatile("isb\n\tmrs %0, cntvct_el0" : "=r"(v) : : "memory");
	return v;
}
#else
#error "clock.h: no cycle counter for this architecture"
#endif

/* nb_ticks: base + (tsc - tsc0) * mult >> 32 converts to ns; mult == 0: the ticks are already ns. */
extern uint64_t nb_tick_tsc0 NB_CLOCK_HIDDEN, nb_tick_ns0 NB_CLOCK_HIDDEN, nb_tick_mult NB_CLOCK_HIDDEN;

static inline uint64_t nb_ticks(void) {
#if defined(__x86_64__)
	return __rdtsc();
#else
	return nb_mono_ns();
#endif
}

static inline uint64_t nb_ticks_ns(uint64_t t) {
	if (!nb_tick_mult) return t;
	return nb_tick_ns0 + (uint64_t)(((unsigned __int128)(t - nb_tick_tsc0) * nb_tick_mult) >> 32);
}

/* nb_ticks_calibrate sets the conversion (5 ms of sleep; x86-64 only). */
void nb_ticks_calibrate(void) NB_CLOCK_HIDDEN;

#endif /* NCCLBPF_CLOCK_H */
