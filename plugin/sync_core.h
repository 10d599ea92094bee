/* SPDX-License-Identifier: MIT */
/*
 * sync_core.h: making newly written code safe to run on every thread before its pointer is
 * published (Arm's rule for cross-modifying code).
 *
 * The JIT writes the code, then cleans the data cache and invalidates the instruction cache over
 * it (DC CVAU / IC IVAU, broadcast to every core). A core that already fetched instructions at
 * that address (the pages of a freed program are often mapped again at the same address) may still
 * hold them in its pipeline until it executes a context-synchronizing event. On AArch64, the
 * publisher therefore issues membarrier(PRIVATE_EXPEDITED_SYNC_CORE) before it stores the new
 * pointer: every running thread of the process executes such an event, and a thread that is not
 * running gets one when it returns from the kernel. A thread that then loads the pointer (acquire)
 * can only fetch the new instructions. x86 needs nothing: its instruction fetch is coherent with
 * stores, and the new code is only reached through a pointer loaded after the store.
 *
 * Each file that publishes includes this header (the profiler shim is also built on its own).
 */
#ifndef NCCLBPF_SYNC_CORE_H
#define NCCLBPF_SYNC_CORE_H

#if defined(__aarch64__)
#include <linux/membarrier.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

static pthread_once_t nb_sync_core_once = PTHREAD_ONCE_INIT;
static int nb_sync_core_ok;

static void nb_sync_core_register(void) {
	nb_sync_core_ok = syscall(__NR_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_SYNC_CORE, 0, 0) == 0;
}

/* nb_sync_core_before_publish: called before a slot's code pointer is stored. Without the
 * command (Linux before 4.16), the publish still proceeds: the window it closes needs a core to
 * have fetched the old instructions at the very address and to still hold them. */
static inline void nb_sync_core_before_publish(void) {
	pthread_once(&nb_sync_core_once, nb_sync_core_register);
	if (nb_sync_core_ok)
		syscall(__NR_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE, 0, 0);
}
#else
static inline void nb_sync_core_before_publish(void) {}
#endif

#endif /* NCCLBPF_SYNC_CORE_H */
