/* SPDX-License-Identifier: MIT */
/*
 * reload_hammer.c: hot reload under load, through libncclbpf.so as NCCL drives it (dlopen, tuner
 * v6 init per communicator, contiguous cost table).
 *
 *   reload_hammer hammer LIB POLICY_A POLICY_B BAD
 *       NCCLBPF_POLICY=POLICY_A must be set. THREADS threads (one communicator each) call
 *       getCollInfo at least CALLS times each and for as long as the reloader runs; the reloader
 *       reloads RELOADS times, cycling B, BAD (fails verification), A. Every call must return
 *       ncclSuccess with a decision wholly of A (Tree/LL, 3 channels) or of B (Ring/Simple, 7).
 *       The map "hits" that both policies define alike must count exactly the decisions each
 *       took (it is carried over by every reload: no update lost). Code memory must not grow.
 *       Each thread also opens the communicator's profiler context (ncclProfiler_v5) and, every
 *       PROF_EVERY calls, emits a P2p start/stop pair (a Send, no kernel channels: it completes at
 *       its stop). The policies' profiler/p2p_end programs (testhost/reload_pa, reload_pb) count
 *       them in the carried map "pev" (A: key 0, B: key 1): pev[0] + pev[1] and the shim's
 *       p2p_end call counter must equal the events started; events the shim refused (NULL
 *       handle) must match its dropped counter, and none may be forced. No call may run without a
 *       policy. NCCLBPF_HAMMER_SWAPS=N replaces the reloads by N swaps of A and B loaded once (each a
 *       publish and a grace period); NCCLBPF_HAMMER_EMPTY_US=U empties the tuner slot for U us before
 *       each reload (a deliberate bug the hammer must catch).
 *   reload_hammer sync LIB POLICY_B
 *       NCCLBPF_POLICY=POLICY_A. RANKS threads (simulated ranks, one communicator each) driven at
 *       different speeds; once they run, a reload to B "at seq N" is requested: every rank must
 *       take A's decision for call_seq < N and B's from N on, and the activation must complete.
 *   reload_hammer idle LIB START_NS
 *       Sleeps until CLOCK_REALTIME reaches START_NS, loads LIB, prints "ready PID" and waits for stdin
 *       to close: many of them started at one instant race for the control directory.
 *   reload_hammer fork LIB DIR
 *       Loads LIB, waits for its control socket in DIR, forks a child that waits for stdin to close,
 *       prints "parent PID child PID" and exits.
 *   reload_hammer serve LIB SECONDS
 *       Two communicators calling getCollInfo every 200 us for SECONDS: a job to point the
 *       control plane (ncclbpf ps, stats, map, reload) at.
 *
 * Sizes from the environment: NCCLBPF_HAMMER_THREADS (8), NCCLBPF_HAMMER_CALLS (200000),
 * NCCLBPF_HAMMER_RELOADS (300), NCCLBPF_HAMMER_PROF_EVERY (1), NCCLBPF_SYNC_RANKS (4). Output: "key value" lines for the Go test.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#include <stdint.h>
#if defined(__x86_64__)
#include <x86intrin.h>
static inline uint64_t nb_cycles(void) { return __rdtsc(); }
#elif defined(__aarch64__)
/* The generic timer's virtual count (CNTVCT_EL0), readable from user space on Linux. */
static inline uint64_t nb_cycles(void) {
	uint64_t v;
	__asm__ volatile("isb\n\tmrs %0, cntvct_el0" : "=r"(v) : : "memory");
	return v;
}
#else
#error "reload_hammer.c: no cycle counter for this architecture"
#endif

#include "nccl_abi.h"
#include "../include/ncclbpf_profiler.h"
#include "../plugin/profiler.h"
#include "../plugin/profiler_abi.h"

#define FAIL(...)                                                                                                     \
	do {                                                                                                          \
		fprintf(stderr, "FAIL: " __VA_ARGS__);                                                                \
		fputc('\n', stderr);                                                                                  \
		exit(1);                                                                                              \
	} while (0)

typedef int (*reload_fn)(const char *path, long long at_seq, char *msg, size_t n);
typedef int (*pending_fn)(void);
typedef void (*rstats_fn)(long long *live, long long *ok, long long *failed, long long *max_publish_ns);
typedef int (*mapu64_fn)(const char *name, unsigned key, unsigned long long *out);
typedef int (*unload_fn)(void);
typedef long long (*pubsum_fn)(void);
typedef void (*empty_fn)(int us);
typedef int (*swap_fn)(const char *a, const char *b, long long n, char *msg, size_t size);

static const host_tuner_v6_t *tuner;
static reload_fn do_reload;
static pending_fn reload_pending;
static rstats_fn reload_stats;
static mapu64_fn map_u64;
static unload_fn unload;
static pubsum_fn publish_sum;
static empty_fn empty_slot;
static swap_fn do_swap;
static const nbp_profiler_v5_t *profiler;
static void (*prof_stats)(struct ncclbpf_prof_stats *);

static void *sym(void *lib, const char *name) {
	void *p = dlsym(lib, name);
	if (!p)
		FAIL("%s not exported: %s", name, dlerror());
	return p;
}

static void open_lib(const char *path) {
	void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!lib)
		FAIL("dlopen %s: %s", path, dlerror());
	tuner = sym(lib, "ncclTunerPlugin_v6");
	do_reload = (reload_fn)sym(lib, "ncclbpfTestingReload");
	reload_pending = (pending_fn)sym(lib, "ncclbpfTestingReloadPending");
	reload_stats = (rstats_fn)sym(lib, "ncclbpfTestingReloadStats");
	map_u64 = (mapu64_fn)sym(lib, "ncclbpfTestingMapU64");
	unload = (unload_fn)sym(lib, "ncclbpfTestingUnload");
	publish_sum = (pubsum_fn)sym(lib, "ncclbpfTestingPublishSumNs");
	empty_slot = (empty_fn)sym(lib, "ncclbpfTestingEmptyTunerSlot");
	do_swap = (swap_fn)sym(lib, "ncclbpfTestingSwap");
	profiler = sym(lib, "ncclProfiler_v5");
	prof_stats = (void (*)(struct ncclbpf_prof_stats *))sym(lib, "ncclbpf_prof_get_stats");
}

static long env_long(const char *name, long def) {
	const char *v = getenv(name);
	return v && *v ? atol(v) : def;
}

static uint64_t now_ns(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static double tsc_per_ns;

static void calibrate(void) {
	uint64_t t0 = now_ns(), c0 = nb_cycles();
	while (now_ns() - t0 < 50000000)
		;
	uint64_t t1 = now_ns(), c1 = nb_cycles();
	tsc_per_ns = (double)(c1 - c0) / (double)(t1 - t0);
}

static void host_log(int level, unsigned long flags, const char *file, int line, const char *fmt, ...) {
	(void)level, (void)flags, (void)file, (void)line, (void)fmt;
}

/* Which policy took a decision: 'A', 'B', '-' (none applied: only before the first load) or 0 (mixed). */
static char decision(ncclResult_t rc, const float *table, int nch) {
	if (rc != ncclSuccess)
		return 0;
	int zeros = 0, at = -1;
	for (int i = 0; i < 21; i++)
		if (table[i] == 0.0f)
			zeros++, at = i;
	if (zeros == 0 && nch == 0)
		return '-';
	if (zeros != 1)
		return 0;
	if (at == 0 * 3 + 0 && nch == 3)
		return 'A';
	if (at == 1 * 3 + 2 && nch == 7)
		return 'B';
	return 0;
}

static ncclResult_t call(void *ctx, float *table, int *nch) {
	for (int i = 0; i < 21; i++)
		table[i] = 1.0f + (float)i;
	*nch = 0;
	return tuner->getCollInfo(ctx, 4 /* AllReduce */, 1 << 20, 1, (float **)(void *)table, 7, 3, 0, nch);
}

/* Ranks of the communicators new_comm makes (all on one node). */
static size_t comm_ranks = 8;

static void *new_comm(uint64_t id) {
	void *ctx = NULL;
	host_nvl_info_t nvl = {1, (int)comm_ranks, (int)comm_ranks};
	if (tuner->init(&ctx, id, comm_ranks, 1, host_log, &nvl, NULL) != ncclSuccess || ctx == NULL)
		FAIL("tuner init");
	return ctx;
}

/* Executable anonymous mappings: JIT code blocks (the Go runtime and libraries are file-backed). */
static int exec_anon_mappings(void) {
	FILE *f = fopen("/proc/self/maps", "r");
	if (!f)
		return -1;
	char line[512];
	int n = 0;
	while (fgets(line, sizeof line, f)) {
		char perms[8] = {0};
		unsigned long ino = 1;
		char path[256] = {0};
		if (sscanf(line, "%*x-%*x %7s %*x %*x:%*x %lu %255s", perms, &ino, path) >= 2 && perms[2] == 'x' &&
		    ino == 0 && path[0] == 0)
			n++;
	}
	fclose(f);
	return n;
}

/* ---- hammer --------------------------------------------------------------------------------- */

static atomic_int reloader_done;
static long calls_min;
static long prof_every;

struct worker {
	pthread_t th;
	int id;
	uint64_t calls, a, b, none, bad, max_cycles, over_10us;
	/* the longest call during which this thread certainly did not lose the CPU (no context
	 * switch since the previous slow call): the machine may be oversubscribed */
	uint64_t max_cycles_unpreempted;
	long csw;
	uint64_t first_bad_seq;
	/* profiler events: P2p pairs started (handle given), refused (NULL handle), calls that failed */
	uint64_t ev_started, ev_null, ev_errors;
	int prof_mask; /* NCCL's activation mask of this communicator: lives until the library unloads */
};

static void *worker_main(void *arg) {
	struct worker *w = arg;
	void *ctx = new_comm(0x1000 + (uint64_t)w->id);
	void *pctx = NULL;
	if (profiler->init(&pctx, 0x1000 + (uint64_t)w->id, &w->prof_mask, "hammer", 1, 8, 0, host_log) !=
	        ncclSuccess ||
	    pctx == NULL)
		FAIL("profiler init");
	nbp_descr_v5_t d;
	memset(&d, 0, sizeof d);
	d.type = NBP_EV_P2P;
	d.rank = 0;
	d.p2p.func = "Send";
	d.p2p.datatype = "ncclFloat32";
	d.p2p.count = 256;
	d.p2p.peer = 1;
	d.p2p.nChannels = 0;
	float table[21];
	int nch;
	for (uint64_t i = 0;; i++) {
		if (i % (uint64_t)prof_every == 0) {
			void *h = NULL;
			if (profiler->startEvent(pctx, &h, &d) != ncclSuccess)
				w->ev_errors++;
			else if (!h)
				w->ev_null++;
			else {
				w->ev_started++;
				if (profiler->stopEvent(h) != ncclSuccess)
					w->ev_errors++;
			}
		}
		if (i >= (uint64_t)calls_min && atomic_load_explicit(&reloader_done, memory_order_relaxed))
			break;
		uint64_t t0 = nb_cycles();
		ncclResult_t rc = call(ctx, table, &nch);
		uint64_t dt = nb_cycles() - t0;
		if (dt > w->max_cycles)
			w->max_cycles = dt;
		if (dt > (uint64_t)(10000 * tsc_per_ns))
			w->over_10us++;
		if (dt > w->max_cycles_unpreempted && dt > (uint64_t)(2000 * tsc_per_ns)) {
			struct rusage ru;
			getrusage(RUSAGE_THREAD, &ru);
			long csw = ru.ru_nvcsw + ru.ru_nivcsw;
			if (csw == w->csw)
				w->max_cycles_unpreempted = dt;
			w->csw = csw;
		}
		switch (decision(rc, table, nch)) {
		case 'A':
			w->a++;
			break;
		case 'B':
			w->b++;
			break;
		case '-':
			w->none++;
			break;
		default:
			if (w->bad++ == 0)
				w->first_bad_seq = i;
		}
		w->calls++;
	}
	if (profiler->finalize(pctx) != ncclSuccess)
		w->ev_errors++;
	tuner->finalize(ctx);
	return NULL;
}

static int hammer(const char *a, const char *b, const char *bad) {
	int nthreads = (int)env_long("NCCLBPF_HAMMER_THREADS", 8);
	calls_min = env_long("NCCLBPF_HAMMER_CALLS", 200000);
	long reloads = env_long("NCCLBPF_HAMMER_RELOADS", 300);
	prof_every = env_long("NCCLBPF_HAMMER_PROF_EVERY", 1);
	if (prof_every < 1)
		prof_every = 1;
	struct ncclbpf_prof_stats ps0, ps1;
	prof_stats(&ps0);
	calibrate();
	/* The first init loads POLICY_A; count code mappings once it runs. */
	void *first = new_comm(1);
	int maps0 = exec_anon_mappings();
	struct worker *ws = calloc((size_t)nthreads, sizeof *ws);
	for (int i = 0; i < nthreads; i++) {
		ws[i].id = i;
		if (pthread_create(&ws[i].th, NULL, worker_main, &ws[i]) != 0)
			FAIL("pthread_create");
	}
	const char *cycle[3] = {b, bad, a};
	long ok = 0, failed = 0, busy = 0;
	uint64_t max_reload_ns = 0, sum_reload_ns = 0;
	char msg[1024];
	long empty_us = env_long("NCCLBPF_HAMMER_EMPTY_US", 0); /* a deliberate bug (mutation test) */
	long swaps = env_long("NCCLBPF_HAMMER_SWAPS", 0);
	uint64_t t0 = now_ns();
	if (swaps > 0) {
		/* Swaps of two prebuilt bundles, each a full publish and grace period. */
		if (do_swap(a, b, swaps, msg, sizeof msg) != 0)
			FAIL("swap: %s", msg);
		printf("%s\n", msg);
		reloads = 0;
	}
	for (long i = 0; i < reloads; i++) {
		const char *p = cycle[i % 3];
		if (empty_us > 0)
			empty_slot((int)empty_us);
		uint64_t r0 = now_ns();
		int rc = do_reload(p, -1, msg, sizeof msg);
		uint64_t d = now_ns() - r0;
		if (rc == 0) {
			ok++;
			sum_reload_ns += d;
			if (d > max_reload_ns)
				max_reload_ns = d;
			if (p == bad)
				FAIL("reload of the unverifiable policy succeeded: %s", msg);
		} else if (rc == -2) {
			busy++;
		} else {
			failed++;
			if (p != bad)
				FAIL("reload %ld of %s failed: %s", i, p, msg);
			if (!strstr(msg, "rejected") || !strstr(msg, "unchanged"))
				FAIL("the failed reload does not say why: %s", msg);
		}
	}
	uint64_t reload_wall = now_ns() - t0;
	atomic_store(&reloader_done, 1);
	uint64_t calls = 0, na = 0, nb = 0, nnone = 0, nbad = 0, maxc = 0, over = 0, maxu = 0;
	uint64_t ev = 0, evnull = 0, everr = 0;
	for (int i = 0; i < nthreads; i++) {
		pthread_join(ws[i].th, NULL);
		calls += ws[i].calls, na += ws[i].a, nb += ws[i].b, nnone += ws[i].none, nbad += ws[i].bad;
		over += ws[i].over_10us;
		ev += ws[i].ev_started, evnull += ws[i].ev_null, everr += ws[i].ev_errors;
		if (ws[i].max_cycles > maxc)
			maxc = ws[i].max_cycles;
		if (ws[i].max_cycles_unpreempted > maxu)
			maxu = ws[i].max_cycles_unpreempted;
		if (ws[i].bad)
			fprintf(stderr, "thread %d: %lu bad decisions, first at call %lu\n", i, (unsigned long)ws[i].bad,
			        (unsigned long)ws[i].first_bad_seq);
	}
	uint64_t wall = now_ns() - t0;
	tuner->finalize(first);
	unsigned long long hits_a = 0, hits_b = 0;
	int hm = map_u64("hits", 0, &hits_a) | map_u64("hits", 1, &hits_b);
	unsigned long long pev_a = 0, pev_b = 0;
	int pm = map_u64("pev", 0, &pev_a) | map_u64("pev", 1, &pev_b);
	prof_stats(&ps1);
	uint64_t p2p_calls = ps1.calls[NCCLBPF_PROF_P2P_END] - ps0.calls[NCCLBPF_PROF_P2P_END];
	uint64_t dropped = ps1.events_dropped - ps0.events_dropped, forced = ps1.events_forced - ps0.events_forced;
	long long live, rok, rfailed, max_pub;
	reload_stats(&live, &rok, &rfailed, &max_pub);
	int maps1 = exec_anon_mappings();
	printf("threads %d\ncalls %lu\ncalls_per_thread_min %ld\ndecisions_a %lu\ndecisions_b %lu\ndecisions_none %lu\n"
	       "bad_decisions %lu\n",
	       nthreads, (unsigned long)calls, calls_min, (unsigned long)na, (unsigned long)nb, (unsigned long)nnone,
	       (unsigned long)nbad);
	printf("reload_attempts %ld\nreloads_ok %ld\nreloads_failed %ld\nreloads_busy %ld\n", reloads, ok, failed, busy);
	printf("reload_mean_us %.1f\nreload_max_us %.1f\npublish_mean_ns %.0f\npublish_max_ns %lld\n",
	       ok ? sum_reload_ns / 1e3 / ok : 0.0, max_reload_ns / 1e3, rok ? (double)publish_sum() / rok : 0.0, max_pub);
	printf("call_max_unpreempted_ns %.0f\n", maxu / tsc_per_ns);
	printf("call_max_ns %.0f\ncalls_over_10us %lu\nreload_phase_s %.2f\nwall_s %.2f\n", maxc / tsc_per_ns,
	       (unsigned long)over, reload_wall / 1e9, wall / 1e9);
	printf("hits_a %llu\nhits_b %llu\nlive_bundles %lld\nexec_mappings_before %d\nexec_mappings_after %d\n", hits_a,
	       hits_b, live, maps0, maps1);
	printf("prof_events %lu\nprof_events_refused %lu\nprof_errors %lu\npev_a %llu\npev_b %llu\n"
	       "prof_p2p_end_calls %lu\nprof_dropped %lu\nprof_forced %lu\nprof_mask %d\n",
	       (unsigned long)ev, (unsigned long)evnull, (unsigned long)everr, pev_a, pev_b, (unsigned long)p2p_calls,
	       (unsigned long)dropped, (unsigned long)forced, ps1.mask);
	if (nbad)
		FAIL("%lu calls returned an error or a decision of neither policy", (unsigned long)nbad);
	/* The first init loaded A before any worker ran: every call must have run a policy. */
	if (nnone)
		FAIL("%lu of %lu calls ran no policy (NCCL's defaults): a reload left the tuner slot empty", (unsigned long)nnone,
		     (unsigned long)calls);
	if (everr)
		FAIL("%lu profiler calls did not return ncclSuccess", (unsigned long)everr);
	if (pm != 0)
		FAIL("map pev not readable: the policies must carry the profiler program (testhost/reload_pa, reload_pb)");
	if (ev == 0)
		FAIL("no profiler event was started");
	if (pev_a + pev_b != ev || p2p_calls != ev)
		FAIL("p2p events started %lu, counted by the programs A %llu + B %llu = %llu, p2p_end calls %lu: events "
		     "lost or counted twice across reloads",
		     (unsigned long)ev, pev_a, pev_b, pev_a + pev_b, (unsigned long)p2p_calls);
	if (dropped != evnull || forced != 0)
		FAIL("the shim reports %lu dropped and %lu forced events; the host saw %lu refused", (unsigned long)dropped,
		     (unsigned long)forced, (unsigned long)evnull);
	if (hm != 0)
		FAIL("map hits not readable");
	/* "first" made no calls; the workers' decisions are all the policy calls there were. */
	if (hits_a != na || hits_b != nb)
		FAIL("map hits counts A %llu B %llu, decisions were A %lu B %lu: updates lost across reloads", hits_a,
		     hits_b, (unsigned long)na, (unsigned long)nb);
	if (live != 1)
		FAIL("%lld bundles alive after the hammer, want 1 (the running one)", live);
	if (maps1 > maps0 + 2)
		FAIL("executable mappings grew from %d to %d: code of replaced bundles not freed", maps0, maps1);
	if (unload() != 0) /* frees the running bundle: a leak checker then sees none of ours */
		FAIL("unload");
	free(ws); /* after unload: the shim keeps the last communicator's mask address */
	printf("PASS\n");
	return 0;
}

/* ---- synchronized activation ----------------------------------------------------------------- */

struct rank {
	pthread_t th;
	int id;
	atomic_uint_fast64_t until, seq;
	uint64_t first_b, last_a; /* call_seq of the first B decision, of the last A decision */
	uint64_t bad;
};

static atomic_int go_ranks;

static void *rank_main(void *arg) {
	struct rank *r = arg;
	void *ctx = new_comm(0xabc); /* the same communicator on every rank */
	float table[21];
	int nch;
	r->first_b = UINT64_MAX;
	while (!atomic_load(&go_ranks))
		;
	for (uint64_t s = 0; s < atomic_load(&r->until); s++) {
		ncclResult_t rc = call(ctx, table, &nch); /* before reading nch */
		char d = decision(rc, table, nch);
		if (d == 'A')
			r->last_a = s;
		else if (d == 'B') {
			if (r->first_b == UINT64_MAX)
				r->first_b = s;
		} else {
			if (r->bad++ < 4)
				fprintf(stderr, "rank %d: call %lu: decision '%c' (rc/cells/channels of neither policy)\n", r->id,
				        (unsigned long)s, d ? d : '?');
		}
		atomic_store(&r->seq, s + 1);
		/* rank speeds differ: rank i sleeps 10 + i * 40 us per call */
		struct timespec ts = {0, 10000L + 40000L * r->id};
		nanosleep(&ts, NULL);
	}
	tuner->finalize(ctx);
	return NULL;
}

static int sync_test(const char *b) {
	int nranks = (int)env_long("NCCLBPF_SYNC_RANKS", 4);
	struct rank *rs = calloc((size_t)nranks, sizeof *rs);
	/* Load A (the first init) before any rank runs. */
	void *first = new_comm(1);
	for (int i = 0; i < nranks; i++) {
		rs[i].id = i;
		atomic_store(&rs[i].until, UINT64_MAX);
		if (pthread_create(&rs[i].th, NULL, rank_main, &rs[i]) != 0)
			FAIL("pthread_create");
	}
	tuner->finalize(first);
	atomic_store(&go_ranks, 1);
	/* Let the fastest rank get ahead, then ask for the switch 300 calls after the fastest. */
	while (atomic_load(&rs[0].seq) < 200)
		;
	/* As an operator would: name a sequence ahead of every rank; if the load took so long that a
	 * rank got there first, the reload is refused (nothing changes) and we try further ahead. */
	uint64_t hi = 0, at = 0, margin = 300;
	char msg[1024];
	int attempts = 0;
	for (;;) {
		hi = 0;
		for (int i = 0; i < nranks; i++)
			if (atomic_load(&rs[i].seq) > hi)
				hi = atomic_load(&rs[i].seq);
		at = hi + margin;
		attempts++;
		int rc = do_reload(b, (long long)at, msg, sizeof msg);
		if (rc == 0)
			break;
		if (rc == -1 && strstr(msg, "already") && attempts < 10) {
			margin *= 4;
			continue;
		}
		FAIL("at-seq reload: %s", msg);
	}
	uint64_t slowest = UINT64_MAX;
	for (int i = 0; i < nranks; i++) {
		uint64_t s = atomic_load(&rs[i].seq);
		if (s < slowest)
			slowest = s;
	}
	int pending_after_arm = reload_pending();
	for (int i = 0; i < nranks; i++)
		atomic_store(&rs[i].until, at + 200); /* ranks stop 200 calls after the switch */
	for (int i = 0; i < nranks; i++)
		pthread_join(rs[i].th, NULL);
	/* The activation completes once every communicator passed at (or all are gone). */
	uint64_t t0 = now_ns();
	while (reload_pending() && now_ns() - t0 < 10000000000ull)
		usleep(1000);
	long long live, rok, rfailed, max_pub;
	reload_stats(&live, &rok, &rfailed, &max_pub);
	printf("attempts %d\n", attempts);
	printf("ranks %d\nat_seq %lu\nfastest_at_request %lu\nslowest_at_request %lu\npending_after_arm %d\n", nranks,
	       (unsigned long)at, (unsigned long)hi, (unsigned long)slowest, pending_after_arm);
	int fails = 0;
	for (int i = 0; i < nranks; i++) {
		printf("rank %d last_a %lu first_b %lu bad %lu\n", i, (unsigned long)rs[i].last_a,
		       (unsigned long)rs[i].first_b, (unsigned long)rs[i].bad);
		if (rs[i].bad || rs[i].first_b != at || rs[i].last_a != at - 1)
			fails++;
	}
	printf("pending_at_end %d\nlive_bundles %lld\n", reload_pending(), live);
	if (fails)
		FAIL("%d ranks did not switch exactly at seq %lu", fails, (unsigned long)at);
	if (reload_pending())
		FAIL("activation still pending after every rank passed seq %lu", (unsigned long)at);
	if (live != 1)
		FAIL("%lld bundles alive after the activation, want 1", live);
	printf("PASS\n");
	return 0;
}

/* ---- serve: a long-running "job" for the control plane ---------------------------------------- */

static atomic_int serve_stop;

static void *serve_main(void *arg) {
	void *ctx = new_comm(0x5e5e + (uint64_t)(uintptr_t)arg);
	float table[21];
	int nch;
	while (!atomic_load(&serve_stop)) {
		call(ctx, table, &nch);
		usleep(200); /* a collective every 200 us */
	}
	tuner->finalize(ctx);
	return NULL;
}

/* Two communicators calling getCollInfo until SECONDS have passed or stdin closes. */
static int serve(double seconds) {
	pthread_t th[2];
	/* Single-rank communicators: this process is the whole job (reload --all finds every rank). */
	comm_ranks = 1;
	for (int i = 0; i < 2; i++)
		pthread_create(&th[i], NULL, serve_main, (void *)(uintptr_t)i);
	printf("serving pid %d\n", (int)getpid());
	uint64_t end = now_ns() + (uint64_t)(seconds * 1e9);
	while (now_ns() < end)
		usleep(10000);
	atomic_store(&serve_stop, 1);
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	return 0;
}

/* ---- idle / fork: processes for the control plane's start-up and fork tests -------------------- */

/* Wait until CLOCK_REALTIME reaches start_ns (so that many processes load the library at once),
 * dlopen it, say so, and wait for stdin to close. */
static int idle(const char *lib, long long start_ns) {
	struct timespec ts;
	for (;;) {
		clock_gettime(CLOCK_REALTIME, &ts);
		long long now = (long long)ts.tv_sec * 1000000000ll + ts.tv_nsec;
		if (now >= start_ns)
			break;
		long long d = start_ns - now;
		struct timespec sl = {d / 1000000000ll, d % 1000000000ll};
		nanosleep(&sl, NULL);
	}
	open_lib(lib);
	printf("ready %d\n", (int)getpid());
	char buf[64];
	while (read(0, buf, sizeof buf) > 0)
		;
	return 0;
}

/* Load the library, wait for the control socket DIR/PID.sock, fork a child that lives until stdin
 * closes, and exit: the parent's socket must not outlive it in the child. */
static int fork_test(const char *lib, const char *dir) {
	open_lib(lib);
	char path[512];
	snprintf(path, sizeof path, "%s/%d.sock", dir, (int)getpid());
	for (int i = 0; access(path, F_OK) != 0; i++) {
		if (i > 2000)
			FAIL("no control socket %s", path);
		usleep(5000);
	}
	pid_t child = fork();
	if (child < 0)
		FAIL("fork");
	if (child == 0) {
		/* Let go of stdout and stderr, so that a reader of the parent's output sees it end. */
		int null = open("/dev/null", O_WRONLY);
		dup2(null, 1);
		dup2(null, 2);
		char buf[64];
		while (read(0, buf, sizeof buf) > 0)
			;
		_exit(0);
	}
	printf("parent %d child %d\n", (int)getpid(), (int)child);
	fflush(stdout);
	_exit(0);
}

int main(int argc, char **argv) {
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc >= 6 && strcmp(argv[1], "hammer") == 0) {
		open_lib(argv[2]);
		return hammer(argv[3], argv[4], argv[5]);
	}
	if (argc >= 4 && strcmp(argv[1], "sync") == 0) {
		open_lib(argv[2]);
		return sync_test(argv[3]);
	}
	if (argc >= 4 && strcmp(argv[1], "serve") == 0) {
		open_lib(argv[2]);
		return serve(atof(argv[3]));
	}
	if (argc >= 4 && strcmp(argv[1], "idle") == 0)
		return idle(argv[2], atoll(argv[3]));
	if (argc >= 4 && strcmp(argv[1], "fork") == 0)
		return fork_test(argv[2], argv[3]);
	fprintf(stderr, "usage: reload_hammer hammer LIB POLICY_A POLICY_B BAD | reload_hammer sync LIB POLICY_B | "
	                "reload_hammer serve LIB SECONDS | reload_hammer idle LIB START_NS | reload_hammer fork LIB DIR\n");
	return 2;
}
