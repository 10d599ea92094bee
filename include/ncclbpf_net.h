/* SPDX-License-Identifier: MIT */
/*
 * ncclbpf_net.h: the network hooks of ncclbpf, for policy authors and for the host side.
 *
 * libncclbpf.so exports NCCL's net plugin ABI (ncclNetPlugin_v8 to _v12: NCCL 2.21 to 2.30) and wraps
 * the net plugin the job already uses (NCCLBPF_NET_PLUGIN; it may export any of ncclNetPlugin_v6 to
 * _v12). Every call goes to that plugin unchanged; the
 * wrapper only watches. Programs attach by section name:
 *
 *     SEC("net/conn")      a connection was set up: listen, connect or accept returned one
 *     SEC("net/send_end")  an isend completed (the test call that reported it done)
 *     SEC("net/recv_end")  an irecv completed
 *
 * Each receives a read-only struct ncclbpf_net_ctx (r1), must return 0, and may call the map
 * helpers, bpf_ktime_get_ns, bpf_get_prandom_u32, the ring buffer helpers and bpf_printk. Maps
 * defined in the same object are the same maps that the bundle's tuner and profiler programs see.
 * A program cannot change what the transport does.
 *
 * Peers. The net ABI does not tell a plugin which rank is at the other end. peer_key identifies the
 * remote endpoint as well as the plugin can see it: on the sending side (connect) it is a 64-bit
 * hash of the connection handle the remote listener published (the same for every connection to that
 * listener, and the listening side computes the same value for its own handle); on the receiving side
 * (accept) it is the hash of the listener's handle that accepted. conn_id numbers the connections of
 * this process from 1.
 *
 * Times are host CLOCK_MONOTONIC nanoseconds. The wrapper reads a cycle counter at isend/irecv and at
 * the test call that reported completion and converts it with a factor calibrated at init; the
 * duration includes the time until NCCL polled (the same latency NCCL sees).
 *
 * Rank consistency: every field is marked __ncclbpf_uniform or __ncclbpf_local (ncclbpf_marks.h);
 * everything the network measures is local. The structure has no pointers; the verifier's
 * description of it (hook/zz_contexts.go) is generated from this header, marks included.
 */
#ifndef NCCLBPF_NET_H
#define NCCLBPF_NET_H

#if defined(__bpf__)
typedef unsigned short __u16;
typedef int __s32;
typedef unsigned int __u32;
typedef unsigned long long __u64;
#else
#include <linux/types.h>
#endif
#include "ncclbpf_marks.h"

/* ctx->event: which hook runs. */
#define NCCLBPF_NET_CONN     1
#define NCCLBPF_NET_SEND_END 2
#define NCCLBPF_NET_RECV_END 3
#define NCCLBPF_NET_NUM_HOOKS 4 /* hook ids are 1..3 */

/* ctx->kind for net/conn */
#define NCCLBPF_NET_KIND_LISTEN  1
#define NCCLBPF_NET_KIND_CONNECT 2
#define NCCLBPF_NET_KIND_ACCEPT  3

/* ctx->flags */
#define NCCLBPF_NET_F_ERROR    0x1 /* test returned an error: the request failed */
#define NCCLBPF_NET_F_UNTIMED  0x2 /* not timed: start_ns, end_ns and duration_ns are 0. Requests are
                                    * timed only while the hook's program reads one of those fields
                                    * (so a counting program costs no clock read); one posted before
                                    * such a program was loaded completes untimed. */
#define NCCLBPF_NET_F_UNSIZED  0x4 /* the plugin's test reported no usable size (a negative one, or more
                                    * than was posted; some plugins never report sizes): bytes is
                                    * posted_bytes */

struct ncclbpf_net_ctx {
	__ncclbpf_uniform __u64 comm_id;     /*   0 NCCL's communicator hash (net ABI v11+, from init); 0
	                                      *     before */
	__ncclbpf_local __u64 peer_key;      /*   8 the remote endpoint, see above */
	__ncclbpf_local __u64 conn_id;       /*  16 this process's connection number, from 1 */
	__ncclbpf_local __u64 bytes;         /*  24 send: bytes sent; recv: bytes received (sum over the
	                                      *     grouped receives as test reported them; posted_bytes
	                                      *     with NCCLBPF_NET_F_UNSIZED) */
	__ncclbpf_local __u64 posted_bytes;  /*  32 send: size given to isend; recv: sum of the sizes posted */
	__ncclbpf_local __u64 start_ns;      /*  40 isend/irecv returned the request (0 for net/conn) */
	__ncclbpf_local __u64 end_ns;        /*  48 test reported it done (net/conn: the call returned) */
	__ncclbpf_local __u64 duration_ns;   /*  56 end_ns - start_ns (0 when untimed) */
	__ncclbpf_local __u64 local_seq;     /*  64 events of this hook so far on this connection, from 0
	                                      *     (events without a connection record, when the table was
	                                      *     full, share one count) */
	__ncclbpf_local __s32 tag;           /*  72 the tag of the isend (first tag of the irecv); -1 for
	                                      *     net/conn */
	__ncclbpf_local __s32 n;             /*  76 grouped receives of the irecv (1 for isend, 0 for
	                                      *     net/conn) */
	__ncclbpf_local __s32 dev;           /*  80 the net device index NCCL passed */
	__ncclbpf_local __s32 kind;          /*  84 NCCLBPF_NET_KIND_* for net/conn; 0 otherwise */
	__ncclbpf_uniform __u32 event;       /*  88 NCCLBPF_NET_* hook id */
	__ncclbpf_local __u32 flags;         /*  92 NCCLBPF_NET_F_* */
	__ncclbpf_uniform __u32 abi_version; /*  96 net ABI NCCL uses, 8..12 (uniform if all ranks run the
	                                      *     same NCCL) */
	__ncclbpf_uniform __u32 reserved;    /* 100 always 0 */
};

#endif /* NCCLBPF_NET_H */
