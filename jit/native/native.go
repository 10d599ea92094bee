// Package native selects the JIT of the running architecture: jit/amd64 on
// x86-64, jit/arm64 on AArch64. Everything that wants "the JIT" (the
// bundle, the plugin, the CLI's --engine jit, the engine-generic tests)
// asks this package, so no caller hard-codes one architecture.
package native
