/* SPDX-License-Identifier: MIT */
/*
 * bench_cpu.h: the calling thread's CPU for the GPU bench programs (nccl_allreduce.c, nccl_p2p.c).
 *
 * bench_pin(k): when NCCL_BENCH_CPUS is a comma-separated list of CPU numbers, pin the calling
 * thread to its k-th entry (k modulo the list's length) and return that CPU; -1 (and no change)
 * when the variable is unset, malformed or the pin is refused. The programs call it after
 * communicator init, so NCCL's own threads keep the process's mask (scripts/gpu-tuner-cost.sh runs
 * the process under `taskset` on the CPUs it does not give the timed threads: a timed thread then
 * shares its core with no proxy thread, not even through a hyperthread sibling).
 *
 * struct bench_pmu: the calling thread's user-space instructions and cycles retired, through
 * perf_event_open (one group, disabled until bench_pmu_on). User space only: the figure is the work
 * the code on the path adds (NCCL's enqueue, the tuner), not the kernel's futex wake-ups of proxy
 * threads, and it needs no privilege under perf_event_paranoid 2. Machines whose virtual CPU has no
 * PMU report none (bench_pmu_open returns 0 and says why on stderr once).
 */
#pragma once
#include <errno.h>
#include <linux/perf_event.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

static int bench_pin(int k) {
	const char *s = getenv("NCCL_BENCH_CPUS");
	if (!s || !*s) return -1;
	int cpus[256], n = 0;
	const char *p = s;
	while (*p && n < 256) {
		char *end;
		long v = strtol(p, &end, 10);
		if (end == p || v < 0 || v >= CPU_SETSIZE || (*end && *end != ',')) {
			fprintf(stderr, "bench: NCCL_BENCH_CPUS=%s: want CPU numbers separated by commas\n", s);
			return -1;
		}
		cpus[n++] = (int)v;
		p = *end ? end + 1 : end;
	}
	if (n == 0) return -1;
	int cpu = cpus[k % n];
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof set, &set) != 0) {
		fprintf(stderr, "bench: pin to CPU %d: %s\n", cpu, strerror(errno));
		return -1;
	}
	return cpu;
}

struct bench_pmu {
	int leader; /* instructions; -1 when closed */
	int cycles; /* -1 when the PMU counts instructions only */
};

static int bench_pmu_event(uint64_t config, int group) {
	struct perf_event_attr a;
	memset(&a, 0, sizeof a);
	a.size = sizeof a;
	a.type = PERF_TYPE_HARDWARE;
	a.config = config;
	a.disabled = group < 0;
	a.exclude_kernel = 1;
	a.exclude_hv = 1;
	a.read_format = PERF_FORMAT_GROUP;
	return (int)syscall(SYS_perf_event_open, &a, 0, -1, group, 0);
}

/* bench_pmu_open: 1 when the calling thread's instructions are counted from now on (in its
 * bench_pmu_on/off windows), 0 when this machine cannot count them. */
static int bench_pmu_open(struct bench_pmu *p) {
	p->leader = bench_pmu_event(PERF_COUNT_HW_INSTRUCTIONS, -1);
	p->cycles = -1;
	if (p->leader < 0) {
		fprintf(stderr, "bench: no instruction counter here (perf_event_open: %s): instructions not reported\n",
		        strerror(errno));
		return 0;
	}
	p->cycles = bench_pmu_event(PERF_COUNT_HW_CPU_CYCLES, p->leader);
	return 1;
}

static inline void bench_pmu_on(const struct bench_pmu *p) {
	ioctl(p->leader, PERF_EVENT_IOC_ENABLE, PERF_IOC_FLAG_GROUP);
}

static inline void bench_pmu_off(const struct bench_pmu *p) {
	ioctl(p->leader, PERF_EVENT_IOC_DISABLE, PERF_IOC_FLAG_GROUP);
}

/* bench_pmu_take: the counts since the last take (the group is reset), cycles 0 without a cycle
 * counter; 0 on success. */
static int bench_pmu_take(const struct bench_pmu *p, uint64_t *instructions, uint64_t *cycles) {
	uint64_t v[3] = {0, 0, 0};
	if (read(p->leader, v, sizeof v) < (ssize_t)(2 * sizeof(uint64_t))) return -1;
	*instructions = v[1];
	*cycles = v[0] > 1 ? v[2] : 0;
	ioctl(p->leader, PERF_EVENT_IOC_RESET, PERF_IOC_FLAG_GROUP);
	return 0;
}

static void bench_pmu_close(struct bench_pmu *p) {
	if (p->cycles >= 0) close(p->cycles);
	if (p->leader >= 0) close(p->leader);
	p->leader = p->cycles = -1;
}
