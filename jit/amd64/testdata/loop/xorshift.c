// The loop of xorshift.s in C, built with -O2 by the benchmark
// (BenchmarkNativeLoop) as the native baseline.
#include <stdint.h>

uint64_t ncclbpf_loop_xorshift(void *ctx, uint64_t len) {
	(void)len;
	uint64_t *state = ctx;
	uint64_t r0 = 0, r3 = *state, r4 = 1000, r5;
	do {
		r5 = r3 << 13;
		r3 ^= r5;
		r5 = r3 >> 7;
		r3 ^= r5;
		r5 = r3 << 17;
		r3 ^= r5;
		r5 *= 0x3f;
		if (!(r5 > r3))
			r0 += r5;
		r0 += r3;
	} while (--r4 != 0);
	*state = r3;
	return r0;
}
