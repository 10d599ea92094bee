package hook

// The contexts' layouts and marks (TunerContext, ChunkContext,
// ProfilerContext, NetContext, their sizes and member offsets) are
// generated from the C headers in include/, the one source of them: each
// member's offset, width and array dimensions come from the BTF clang
// writes for the headers, and whether a program may write it
// (__ncclbpf_out) and whether it is the same on every rank
// (__ncclbpf_uniform, __ncclbpf_local) from the BTF declaration tags those
// marks become (include/ncclbpf_marks.h, internal/ctxgen).
// TestContextsGenerated fails when zz_contexts.go is not what the headers
// give: after changing a header, run `go generate ./hook`.

//go:generate go run ../internal/ctxgen/cmd/ctxgen -include ../include -o zz_contexts.go
