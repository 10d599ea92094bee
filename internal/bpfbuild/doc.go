// Package bpfbuild holds the check that every committed eBPF object is
// what its recipe builds: scripts/bpf-objects.txt lists each object with
// its source, scripts/build-bpf.sh builds them all with one set of flags,
// and TestObjectsReproducible rebuilds them into a temporary folder and
// compares them byte for byte with the committed files.
package bpfbuild
