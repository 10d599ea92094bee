// Red team, class 5: map access flags. A map declared BPF_F_RDONLY_PROG
// may be read but not written by programs (E029, also through helpers that
// write it: update, delete, atomics); a map declared BPF_F_WRONLY_PROG may
// be written but not read (E034, also through helpers that read its
// memory: keys, values, ringbuf data, bpf_printk formats).
#include "../vtest.h"

struct cfgval {
	__u64 limit;
	__u32 table[8];
}; /* 40 bytes */

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 4);
	__uint(map_flags, BPF_F_RDONLY_PROG);
	__type(key, __u32);
	__type(value, struct cfgval);
} cfg SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__uint(map_flags, BPF_F_RDONLY_PROG);
	__type(key, __u64);
	__type(value, __u64);
} rohash SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 4);
	__uint(map_flags, BPF_F_WRONLY_PROG);
	__type(key, __u32);
	__type(value, struct cfgval);
} sink SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__uint(map_flags, BPF_F_WRONLY_PROG);
	__type(key, __u64);
	__type(value, __u64);
} wohash SEC(".maps");

SEC("vtest")
int bad_store_rdonly(struct vtest_ctx *c)
{
	__u32 k = 0;
	struct cfgval *v = bpf_map_lookup_elem(&cfg, &k);

	if (!v)
		return 0;
	v->limit = c->bytes; /* ERROR E029 */
	return 0;
}

SEC("vtest")
int bad_store_rdonly_indexed(struct vtest_ctx *c)
{
	__u32 k = 1;
	struct cfgval *v = bpf_map_lookup_elem(&cfg, &k);
	__u32 i = c->nranks & 7;

	if (!v)
		return 0;
	v->table[i] = 1; /* ERROR E029 */
	return 0;
}

SEC("vtest")
int bad_atomic_add_rdonly(struct vtest_ctx *c)
{
	__u32 k = 0;
	struct cfgval *v = bpf_map_lookup_elem(&cfg, &k);

	if (!v)
		return 0;
	__sync_fetch_and_add(&v->limit, 1); /* ERROR E029 */
	return 0;
}

SEC("vtest")
int bad_update_rdonly(struct vtest_ctx *c)
{
	__u32 k = 0;
	struct cfgval nv = {};

	nv.limit = c->bytes;
	bpf_map_update_elem(&cfg, &k, &nv, BPF_ANY); /* ERROR E029 */
	return 0;
}

SEC("vtest")
int bad_update_rdonly_hash(struct vtest_ctx *c)
{
	__u64 k = c->op, v = c->bytes;

	bpf_map_update_elem(&rohash, &k, &v, BPF_ANY); /* ERROR E029 */
	return 0;
}

SEC("vtest")
int bad_delete_rdonly_hash(struct vtest_ctx *c)
{
	__u64 k = c->op;

	bpf_map_delete_elem(&rohash, &k); /* ERROR E029 */
	return 0;
}

NOINLINE int poke(__u64 *p, __u32 x)
{
	*p = x; /* ERROR E029 */
	return x & 1;
}

SEC("vtest")
int bad_store_rdonly_in_callee(struct vtest_ctx *c)
{
	__u32 k = 2;
	struct cfgval *v = bpf_map_lookup_elem(&cfg, &k);

	if (!v)
		return 0;
	return poke(&v->limit, c->op);
}

SEC("vtest")
int bad_store_rdonly_hash_value(struct vtest_ctx *c)
{
	__u64 k = 3;
	__u64 *v = bpf_map_lookup_elem(&rohash, &k);

	if (!v)
		return 0;
	*v += 1; /* ERROR E029 */
	return 0;
}

SEC("vtest")
int bad_read_wronly(struct vtest_ctx *c)
{
	__u32 k = 0;
	struct cfgval *v = bpf_map_lookup_elem(&sink, &k);

	if (!v)
		return 0;
	return v->limit & 1; /* ERROR E034 */
}

SEC("vtest")
int bad_read_wronly_hash(struct vtest_ctx *c)
{
	__u64 k = c->op;
	__u64 *v = bpf_map_lookup_elem(&wohash, &k);

	if (!v)
		return 0;
	return *v > 5; /* ERROR E034 */
}

SEC("vtest")
int bad_wronly_value_as_key(struct vtest_ctx *c)
{
	__u32 k = 0;
	struct cfgval *v = bpf_map_lookup_elem(&sink, &k);

	if (!v)
		return 0;
	/* the helper reads the key out of the write-only value */
	return bpf_map_lookup_elem(&hash, &v->limit) != 0; /* ERROR E034 */
}

SEC("vtest")
int bad_wronly_value_as_update_value(struct vtest_ctx *c)
{
	__u32 k = 0;
	__u64 hk = 1;
	struct cfgval *v = bpf_map_lookup_elem(&sink, &k);

	if (!v)
		return 0;
	bpf_map_update_elem(&hash, &hk, &v->limit, BPF_ANY); /* ERROR E034 */
	return 0;
}

SEC("vtest")
int bad_wronly_value_to_ringbuf(struct vtest_ctx *c)
{
	__u32 k = 0;
	struct cfgval *v = bpf_map_lookup_elem(&sink, &k);

	if (!v)
		return 0;
	bpf_ringbuf_output(&rb, v, sizeof(*v), 0); /* ERROR E034 */
	return 0;
}

SEC("vtest")
int bad_wronly_fetch_add(struct vtest_ctx *c)
{
	__u32 k = 0;
	struct cfgval *v = bpf_map_lookup_elem(&sink, &k);

	if (!v)
		return 0;
	return __sync_fetch_and_add(&v->limit, 1) & 1; /* ERROR E034 */
}

NOINLINE int peek(__u64 *p)
{
	return *p & 1; /* ERROR E034 */
}

SEC("vtest")
int bad_read_wronly_in_callee(struct vtest_ctx *c)
{
	__u32 k = 3;
	struct cfgval *v = bpf_map_lookup_elem(&sink, &k);

	if (!v)
		return 0;
	return peek(&v->limit);
}

SEC("vtest")
int bad_wronly_value_as_printk_format(struct vtest_ctx *c)
{
	__u32 k = 0;
	struct cfgval *v = bpf_map_lookup_elem(&sink, &k);

	if (!v)
		return 0;
	v->table[7] = 0;
	bpf_trace_printk((const char *)v, sizeof(*v), 1, 2, 3); /* ERROR E034 */
	return 0;
}

SEC("vtest")
int ok_read_rdonly_write_wronly(struct vtest_ctx *c)
{
	__u32 k = 0;
	struct cfgval *in = bpf_map_lookup_elem(&cfg, &k);
	struct cfgval *out = bpf_map_lookup_elem(&sink, &k);
	__u32 i = c->nranks & 7;

	if (!in || !out)
		return 0;
	out->limit = in->limit;
	out->table[i] = in->table[i];
	return 0;
}

SEC("vtest")
int ok_update_wronly_from_rdonly(struct vtest_ctx *c)
{
	__u64 k = c->op;
	__u64 *limit = bpf_map_lookup_elem(&rohash, &k);
	__u64 v = limit ? *limit : 0;

	bpf_map_update_elem(&wohash, &k, &v, BPF_ANY);
	return 0;
}
