/* SPDX-License-Identifier: MIT */
/*
 * profiler_device.c: the profiler shim with native summary programs, for a run under real NCCL on the
 * GPU machine (no Go there). Built with the shim into one library:
 *
 *   gcc -O2 -shared -fPIC -pthread -I include -o libprofiler-device.so plugin/profiler.c testhost/profiler_device.c
 *   NCCL_PROFILER_PLUGIN=$PWD/libprofiler-device.so python job.py
 *
 * A constructor publishes the programs and the summary is printed to stderr when the library is
 * unloaded (NCCL dlcloses it with its last communicator) or the process exits.
 */
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>

#include "../include/ncclbpf_profiler.h"
#include "../plugin/profiler.h"

struct sum {
	_Atomic uint64_t n, dur, gpu, gpu_n, children, nch_mismatch, flags_or;
	_Atomic uint64_t min_dur, max_dur;
};
static struct sum sums[NCCLBPF_PROF_NUM_HOOKS];

static uint64_t summary_prog(void *ctx) {
	const struct ncclbpf_prof_ctx *c = ctx;
	if (c->event >= NCCLBPF_PROF_NUM_HOOKS) return 0;
	struct sum *s = &sums[c->event];
	atomic_fetch_add(&s->n, 1);
	atomic_fetch_add(&s->dur, c->duration_ns);
	if (c->flags & NCCLBPF_PROF_F_GPU_TIMED) {
		atomic_fetch_add(&s->gpu, c->gpu_duration_ns);
		atomic_fetch_add(&s->gpu_n, 1);
	}
	atomic_fetch_add(&s->children, (uint64_t)c->n_children);
	if ((c->event == NCCLBPF_PROF_COLL_END || c->event == NCCLBPF_PROF_P2P_END) && c->n_children != c->n_channels)
		atomic_fetch_add(&s->nch_mismatch, 1);
	atomic_fetch_or(&s->flags_or, c->flags);
	uint64_t m = atomic_load(&s->min_dur);
	while ((m == 0 || c->duration_ns < m) && !atomic_compare_exchange_weak(&s->min_dur, &m, c->duration_ns)) {
	}
	m = atomic_load(&s->max_dur);
	while (c->duration_ns > m && !atomic_compare_exchange_weak(&s->max_dur, &m, c->duration_ns)) {
	}
	if (atomic_load(&s->n) <= 3)
		fprintf(stderr,
		        "ncclbpf-dev: hook %u rank %d func %d bytes %llu nch %d children %d peer %d ch %d dur %llu ns gpu %llu ns flags %#x v%u\n",
		        c->event, c->rank, c->func, (unsigned long long)c->bytes, c->n_channels, c->n_children, c->peer,
		        c->channel_id, (unsigned long long)c->duration_ns, (unsigned long long)c->gpu_duration_ns, c->flags,
		        c->abi_version);
	return 0;
}

__attribute__((constructor)) static void dev_init(void) {
	for (int h = NCCLBPF_PROF_FIRST_HOOK; h <= NCCLBPF_PROF_LAST_HOOK; h++) ncclbpf_prof_publish(h, (uintptr_t)summary_prog);
}

__attribute__((destructor)) static void dev_fini(void) {
	static const char *names[] = {"", "coll_end", "p2p_end", "kernel_ch_end", "proxy_op_end"};
	struct ncclbpf_prof_stats st;
	ncclbpf_prof_get_stats(&st);
	fprintf(stderr, "ncclbpf-dev: profiler v%d, mask %#x, dropped %llu, forced %llu, orphans %llu\n", st.version, st.mask,
	        (unsigned long long)st.events_dropped, (unsigned long long)st.events_forced, (unsigned long long)st.orphans);
	for (int h = 1; h < NCCLBPF_PROF_NUM_HOOKS; h++) {
		struct sum *s = &sums[h];
		uint64_t n = atomic_load(&s->n);
		if (!n) {
			fprintf(stderr, "ncclbpf-dev: %-13s 0 events\n", names[h]);
			continue;
		}
		uint64_t gn = atomic_load(&s->gpu_n);
		fprintf(stderr,
		        "ncclbpf-dev: %-13s %llu events, host mean %.1f us (min %.1f max %.1f), gpu mean %.1f us over %llu, "
		        "children mean %.2f, children != channels: %llu, flags seen %#llx\n",
		        names[h], (unsigned long long)n, atomic_load(&s->dur) / 1e3 / n, atomic_load(&s->min_dur) / 1e3,
		        atomic_load(&s->max_dur) / 1e3, gn ? atomic_load(&s->gpu) / 1e3 / gn : 0.0, (unsigned long long)gn,
		        (double)atomic_load(&s->children) / n, (unsigned long long)atomic_load(&s->nch_mismatch),
		        (unsigned long long)atomic_load(&s->flags_or));
	}
}
