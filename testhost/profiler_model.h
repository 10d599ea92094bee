/* SPDX-License-Identifier: MIT */
/*
 * profiler_model.h: the test host's latency model of a collective, in ns, from (algorithm, protocol,
 * channels, bytes). Not NCCL's model: a simple one whose best configuration changes with the size, so
 * that a closed loop has something to find.
 *
 *   t = lat[algo][proto] + 250 ns * channels + bytes / (bw[algo][proto] * min(channels, 12))
 *
 * lat (ns):      LL     LL128   SIMPLE          bw (bytes/ns per channel):  LL    LL128  SIMPLE
 *   TREE        4000    6500    9500                                 TREE   0.25   1.0    1.6
 *   RING        5000    7500   11000                                 RING   0.30   1.3    2.4
 *
 * A slowdown (model_slow) multiplies the time of one (algorithm, protocol) pair by `factor`.
 */
#ifndef TESTHOST_PROFILER_MODEL_H
#define TESTHOST_PROFILER_MODEL_H

#include <stdint.h>

#define MODEL_TREE 0
#define MODEL_RING 1

struct model {
	int slow_algo, slow_proto; /* -1: no slowdown */
	uint32_t slow_factor;
};

static const uint32_t model_lat[2][3] = {{4000, 6500, 9500}, {5000, 7500, 11000}};
/* bytes per ns per channel, times 100 */
static const uint32_t model_bw100[2][3] = {{25, 100, 160}, {30, 130, 240}};

static inline uint64_t model_ns(const struct model *m, int algo, int proto, int nch, uint64_t bytes) {
	if (algo < 0 || algo > 1 || proto < 0 || proto > 2 || nch < 1) return 0;
	uint64_t eff = (uint64_t)(nch < 12 ? nch : 12);
	uint64_t t = model_lat[algo][proto] + 250ull * (uint64_t)nch + bytes * 100ull / (model_bw100[algo][proto] * eff);
	if (m && m->slow_algo == algo && m->slow_proto == proto) t *= m->slow_factor;
	return t;
}

#endif
