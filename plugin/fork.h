/* SPDX-License-Identifier: MIT */
/*
 * fork.h: what a forked child must not inherit from the control plane (fork.c). Declarations only.
 */
#ifndef NCCLBPF_FORK_H
#define NCCLBPF_FORK_H

/*
 * ncclbpf_control_fds records the control server's listening socket and the lock file of its name
 * (-1: none). A child created by fork() closes both at once (pthread_atfork), so that it neither
 * accepts connections it can never answer (the Go runtime does not run in a forked child) nor keeps
 * the parent's socket name alive after the parent exits.
 */
void ncclbpf_control_fds(int listener, int lock);

#endif /* NCCLBPF_FORK_H */
