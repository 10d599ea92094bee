/* SPDX-License-Identifier: MIT */
/*
 * loader.h: the process-wide policy load (loader.c), which the tuner, profiler and net shims call
 * down into. The load runs once per process, in Go (ncclbpfGoLoad), at the first init of any of
 * them; its outcome is reported once through NCCL's logger, by the first init that has one.
 * shim.h declares the parts Go calls (ncclbpf_ensure_loaded, ncclbpf_load_message,
 * ncclbpf_printk_sink).
 */
#ifndef NCCLBPF_LOADER_H
#define NCCLBPF_LOADER_H

#include "shim.h"

#define NB_LOADER_HIDDEN __attribute__((visibility("hidden")))

/* NCCL's logger (ncclDebugLogger_t); every shim's own typedef of it is the same function type. */
typedef void (*nb_loader_log_t)(int level, unsigned long flags, const char *file, int line, const char *fmt, ...);

/* nb_load_for_init: the tuner's init: loads the policy if needed, keeps log as the logger of
 * bpf_printk lines if it is the first, and reports the outcome through log once per process. */
void nb_load_for_init(nb_loader_log_t log) NB_LOADER_HIDDEN;

/* ncclbpf_report_load loads the policy if needed and reports the outcome through log once per
 * process; log NULL (profiler ABI v1-v3 give none): nothing, the report is left to a later init. */
void ncclbpf_report_load(nb_loader_log_t log) NB_LOADER_HIDDEN;

/* ncclbpf_strict_failed loads the policy if needed; 1 when it did not load and NCCLBPF_STRICT is set
 * (every init of the library then fails), else 0. */
int ncclbpf_strict_failed(void) NB_LOADER_HIDDEN;

/* nb_load_status is ncclbpf_tuner_stats.load_status: 0 loaded, 1 no policy, <0 failed, 2 not yet. */
int nb_load_status(void) NB_LOADER_HIDDEN;

#endif /* NCCLBPF_LOADER_H */
