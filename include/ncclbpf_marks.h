/* SPDX-License-Identifier: MIT */
/*
 * ncclbpf_marks.h: the marks on the members of the hook contexts (ncclbpf.h, ncclbpf_profiler.h,
 * ncclbpf_net.h), included by those headers.
 *
 * Every member of a context says whether it is the same on every rank of the communicator
 * (__ncclbpf_uniform) or possibly different on each rank (__ncclbpf_local); a member a program may
 * write (a decision for NCCL) also says __ncclbpf_out, every other member is read-only. These marks
 * are the one description of what a program may do with each member: compiled with clang (any
 * target) they become BTF declaration tags ("ncclbpf:uniform", "ncclbpf:local", "ncclbpf:out"),
 * from which the Go description that the verifier enforces is generated (hook/zz_contexts.go, by
 * internal/ctxgen); with another compiler, or a clang without the attribute, they expand to
 * nothing and change no layout.
 */
#ifndef NCCLBPF_MARKS_H
#define NCCLBPF_MARKS_H

#if defined(__clang__) && defined(__has_attribute)
#if __has_attribute(btf_decl_tag)
#define NCCLBPF_MARK_(s) __attribute__((btf_decl_tag("ncclbpf:" s)))
#endif
#endif
#ifndef NCCLBPF_MARK_
#define NCCLBPF_MARK_(s)
#endif

/* the same on every rank of the communicator */
#define __ncclbpf_uniform NCCLBPF_MARK_("uniform")
/* possibly different on each rank */
#define __ncclbpf_local NCCLBPF_MARK_("local")
/* writable by the program: an output the host reads back */
#define __ncclbpf_out NCCLBPF_MARK_("out")

#endif /* NCCLBPF_MARKS_H */
