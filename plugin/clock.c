/* SPDX-License-Identifier: MIT */
/* clock.c: what the clocks of clock.h need set once: the coarse clock's resolution and the
 * cycle-counter-to-ns factor of nb_ticks. */
#define _GNU_SOURCE
#include "clock.h"

uint64_t nb_coarse_res_ns = 10000000;
uint64_t nb_tick_tsc0, nb_tick_ns0, nb_tick_mult;

__attribute__((constructor)) static void nb_coarse_res(void) {
	struct timespec res;
	if (clock_getres(CLOCK_MONOTONIC_COARSE, &res) == 0 && res.tv_sec == 0) nb_coarse_res_ns = (uint64_t)res.tv_nsec;
}

void nb_ticks_calibrate(void) {
#if defined(__x86_64__)
	uint64_t n0 = nb_mono_ns(), t0 = __rdtsc();
	struct timespec d = {0, 5000000};
	nanosleep(&d, NULL);
	uint64_t n1 = nb_mono_ns(), t1 = __rdtsc();
	if (t1 > t0 && n1 > n0) {
		nb_tick_mult = (uint64_t)(((unsigned __int128)(n1 - n0) << 32) / (t1 - t0));
		nb_tick_tsc0 = t1;
		nb_tick_ns0 = n1;
	}
#endif
}
