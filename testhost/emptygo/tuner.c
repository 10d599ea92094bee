/* The tuner plugin table of testhost/emptygo: init calls into Go, the rest does nothing. */
#include <stddef.h>
#include <stdint.h>

#include "_cgo_export.h"

typedef struct {
	const char *name;
	int (*init)(void **, uint64_t, size_t, size_t, void *, void *, void *);
	int (*getCollInfo)(void *, int, size_t, int, float **, int, int, int, int *);
	int (*finalize)(void *);
} empty_tuner_v5_t;

static int empty_init(void **ctx, uint64_t comm, size_t nranks, size_t nnodes, void *log, void *nvl, void *consts) {
	return emptygoInit(ctx, comm, nranks, nnodes, log, nvl, consts);
}
static int empty_get(void *ctx, int coll, size_t n, int pipe, float **table, int na, int np, int reg, int *nch) {
	return 0;
}
static int empty_fin(void *ctx) { return 0; }

const empty_tuner_v5_t ncclTunerPlugin_v5 = {"emptygo", empty_init, empty_get, empty_fin};
