// The compute loop of compute.s in C, built with -O2 by the benchmark
// (BenchmarkNativeLoop) as the native baseline. Same signature as the JIT's
// entry point seen from C: (context, length) -> r0.
#include <stdint.h>

uint64_t ncclbpf_loop_compute(void *ctx, uint64_t len) {
	(void)ctx;
	(void)len;
	uint64_t r0 = 0, r3 = 0x12345, r4 = 1000, r5;
	// The compiler must not fold the whole loop to its result: the eBPF
	// code computes it at run time too.
	__asm__("" : "+r"(r3), "+r"(r4));
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
	return r0;
}
