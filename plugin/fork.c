/* SPDX-License-Identifier: MIT */
/*
 * fork.c: the control plane in forked children (see fork.h).
 *
 * A training process may fork (data loader workers, a launcher's helpers). The child gets copies of
 * every descriptor, the control socket's included, but only the forking thread: the Go runtime, and
 * with it the control server, does not run there. A child that kept the listening socket would make
 * connections succeed and then never answer, and its copy of the name's lock would make the socket
 * look owned after the parent has gone. The child handler closes both; the parent keeps serving.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

#include "fork.h"

static atomic_int nb_ctl_listener = -1, nb_ctl_lock = -1;

static void nb_fork_child(void) {
	int fd = atomic_exchange(&nb_ctl_listener, -1);
	if (fd >= 0)
		close(fd);
	fd = atomic_exchange(&nb_ctl_lock, -1);
	if (fd >= 0)
		close(fd);
}

__attribute__((constructor)) static void nb_fork_ctor(void) { pthread_atfork(NULL, NULL, nb_fork_child); }

void ncclbpf_control_fds(int listener, int lock) {
	atomic_store(&nb_ctl_listener, listener);
	atomic_store(&nb_ctl_lock, lock);
}
