/* SPDX-License-Identifier: MIT */
/*
 * loader.c: the process-wide policy load (loader.h). The tuner, profiler and net shims call down
 * into it from their inits; it calls Go once (ncclbpfGoLoad), off the hot path.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include "internal.h"
#include "loader.h"
#include "metrics_fold.h"
#include "_cgo_export.h"

static pthread_once_t nb_load_once = PTHREAD_ONCE_INIT;
static atomic_int nb_load_rc = 2; /* see ncclbpf_tuner_stats.load_status */
static char nb_load_msg[1024];
static atomic_int nb_load_reported;
static atomic_int nb_load_strict; /* NCCLBPF_STRICT: a failed load fails every init */

/*
 * Go code may return to C with the upper halves of the YMM registers dirty (AVX used without a
 * final VZEROUPPER). Until they are cleared, every legacy-SSE instruction on this thread, in NCCL
 * and in the shim, pays a state-merge penalty (measured: +7 ns per getCollInfo). Clear them after
 * every call into Go.
 */
static void nb_clean_upper_state(void) {
#if defined(__x86_64__)
	if (__builtin_cpu_supports("avx"))
		__asm__ volatile("vzeroupper" ::: "memory");
#endif
}

static void nb_do_load(void) {
	nb_dlog_configure(getenv("NCCLBPF_DECISION_LOG"));
	int strict = 0;
	int rc = ncclbpfGoLoad(nb_load_msg, sizeof nb_load_msg, &strict);
	nb_load_msg[sizeof nb_load_msg - 1] = 0;
	nb_clean_upper_state();
	atomic_store(&nb_load_strict, strict);
	atomic_store(&nb_load_rc, rc);
	/* A policy that did not load is said on stderr too, once per process (this runs once): NCCL
	 * prints its WARN lines only when NCCL_DEBUG asks for them. */
	if (rc < 0) {
		fprintf(stderr, "%s\n", nb_load_msg);
		fflush(stderr);
	}
}

void ncclbpf_ensure_loaded(void) { pthread_once(&nb_load_once, nb_do_load); }

int ncclbpf_strict_failed(void) {
	ncclbpf_ensure_loaded();
	return atomic_load(&nb_load_rc) < 0 && atomic_load(&nb_load_strict);
}

int nb_load_status(void) { return atomic_load(&nb_load_rc); }

const char *ncclbpf_load_message(void) { return nb_load_msg; }

/* NCCL's logger of the first tuner init, for bpf_printk lines (the logger is process-wide in NCCL). */
static _Atomic(nb_loader_log_t) nb_first_log;

static void nb_printk(void *ctx, const char *line, uint32_t len) {
	(void)ctx;
	(void)len;
	nb_loader_log_t log = atomic_load_explicit(&nb_first_log, memory_order_acquire);
	if (log)
		log(NB_LOG_INFO, NB_SUBSYS_TUNING, __FILE__, __LINE__, "ncclbpf printk: %s", line);
}

uintptr_t ncclbpf_printk_sink(void) { return (uintptr_t)nb_printk; }

/* The outcome of the policy load, through NCCL's logger, once per process (by whichever init with a
 * logger comes first: the profiler's runs before the tuner's). */
static void nb_report_load(nb_loader_log_t log) {
	if (atomic_exchange(&nb_load_reported, 1) == 0 && log) /* "%s": messages may contain '%' */
		log(nb_load_rc < 0 ? NB_LOG_WARN : NB_LOG_INFO, NB_SUBSYS_INIT | NB_SUBSYS_TUNING, __FILE__, __LINE__, "%s",
		    nb_load_msg);
}

void nb_load_for_init(nb_loader_log_t log) {
	nb_loader_log_t none = NULL;
	if (log)
		atomic_compare_exchange_strong(&nb_first_log, &none, log);
	ncclbpf_ensure_loaded();
	nb_report_load(log);
}

void ncclbpf_report_load(nb_loader_log_t log) {
	if (log == NULL)
		return; /* profiler ABI v1-v3 give no logger: leave the report to a later init */
	ncclbpf_ensure_loaded();
	nb_report_load(log);
}
