/* SPDX-License-Identifier: MIT */
/* grace.c: the membarrier registrations and the reader-wait of grace.h. */
#define _GNU_SOURCE
#include <linux/membarrier.h>
#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "grace.h"

static int nb_membarrier(int cmd) { return (int)syscall(__NR_membarrier, cmd, 0, 0); }

static pthread_once_t nb_grace_once = PTHREAD_ONCE_INIT;
static int nb_grace_state; /* 1 private expedited registered, -1 unavailable */

static void nb_grace_register(void) {
	nb_grace_state = nb_membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0 ? 1 : -1;
}

int nb_grace_fence(void) {
	pthread_once(&nb_grace_once, nb_grace_register);
	if (nb_grace_state != 1 || nb_membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) != 0)
		return -1;
	return 0;
}

void nb_grace_wait_all(nb_grace_next_fn next, void *it) {
	for (_Atomic uint64_t *w; (w = next(it)) != NULL;) {
		uint64_t s = atomic_load_explicit(w, memory_order_acquire);
		if ((s & 1) == 0)
			continue;
		for (int spins = 0; atomic_load_explicit(w, memory_order_acquire) == s; spins++) {
			if (spins < 1000)
				sched_yield();
			else
				nanosleep(&(struct timespec){0, 50000}, NULL);
		}
	}
}

#if defined(__aarch64__)
static pthread_once_t nb_sync_core_once = PTHREAD_ONCE_INIT;
static int nb_sync_core_ok;

static void nb_sync_core_register(void) {
	nb_sync_core_ok = nb_membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_SYNC_CORE) == 0;
}

void nb_grace_before_publish(void) {
	pthread_once(&nb_sync_core_once, nb_sync_core_register);
	if (nb_sync_core_ok)
		nb_membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE);
}
#else
void nb_grace_before_publish(void) {}
#endif
