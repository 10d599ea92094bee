// Package loopbench puts a JIT's code next to native code for the same
// computation: it builds a C file into a shared object with a C compiler
// (-O2), loads uBPF's JIT when given its library, and calls any of these
// entry points n times from one C loop, so that their times compare
// directly: each is a function of (context, length) returning a 64-bit
// value in the first return register, as the JITs' entry points are seen
// from C.
package loopbench

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>

typedef uint64_t (*loopbench_fn)(void *mem, uint64_t len);

// The one loop every engine is called from.
static uint64_t loopbench_loop(uintptr_t fn, void *mem, uint64_t len, uint64_t n) {
	uint64_t acc = 0;
	for (uint64_t i = 0; i < n; i++) acc += ((loopbench_fn)fn)(mem, len);
	return acc;
}

static void *loopbench_open(const char *path) { return dlopen(path, RTLD_NOW | RTLD_LOCAL); }
static uintptr_t loopbench_sym(void *h, const char *name) { return (uintptr_t)dlsym(h, name); }
static int loopbench_close(void *h) { return dlclose(h); }
static const char *loopbench_dlerror(void) {
	const char *e = dlerror();
	return e ? e : "no reason given";
}

// uBPF's API (ubpf.h), called through the addresses dlsym found.
typedef void *(*ubpf_create_t)(void);
typedef void (*ubpf_destroy_t)(void *);
typedef int (*ubpf_load_t)(void *, const void *, uint32_t, char **);
typedef uintptr_t (*ubpf_compile_t)(void *, char **);

static void *loopbench_ubpf_create(uintptr_t f) { return ((ubpf_create_t)f)(); }
static void loopbench_ubpf_destroy(uintptr_t f, void *vm) { ((ubpf_destroy_t)f)(vm); }
static int loopbench_ubpf_load(uintptr_t f, void *vm, const void *code, uint32_t len, char **err) {
	return ((ubpf_load_t)f)(vm, code, len, err);
}
static uintptr_t loopbench_ubpf_compile(uintptr_t f, void *vm, char **err) {
	return ((ubpf_compile_t)f)(vm, err);
}
*/
import "C"

import (
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"unsafe"
)

// Loop calls the entry point fn n times from C with mem as its context and
// returns the sum of the results.
func Loop(fn uintptr, mem []byte, n int) uint64 {
	var p unsafe.Pointer
	if len(mem) > 0 {
		p = unsafe.Pointer(&mem[0])
	}
	return uint64(C.loopbench_loop(C.uintptr_t(fn), p, C.uint64_t(len(mem)), C.uint64_t(n)))
}

// Compilers returns the C compilers found in PATH among clang-19, clang
// and gcc, in that order.
func Compilers() []string {
	var out []string
	for _, cc := range []string{"clang-19", "clang", "gcc"} {
		if _, err := exec.LookPath(cc); err == nil {
			out = append(out, cc)
		}
	}
	return out
}

// Build compiles the C file src with cc -O2 into a shared object in dir
// and returns its path.
func Build(cc, src, dir string) (string, error) {
	out := filepath.Join(dir, strings.TrimSuffix(filepath.Base(src), ".c")+"-"+cc+".so")
	cmd := exec.Command(cc, "-O2", "-fPIC", "-shared", "-o", out, src)
	if msg, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("loopbench: %s -O2 %s: %v: %s", cc, src, err, strings.TrimSpace(string(msg)))
	}
	return out, nil
}

// Lib is a loaded shared object.
type Lib struct {
	path string
	h    unsafe.Pointer
}

// Open loads the shared object at path.
func Open(path string) (*Lib, error) {
	cp := C.CString(path)
	defer C.free(unsafe.Pointer(cp))
	h := C.loopbench_open(cp)
	if h == nil {
		return nil, fmt.Errorf("loopbench: load %s: %s", path, C.GoString(C.loopbench_dlerror()))
	}
	return &Lib{path: path, h: h}, nil
}

// Func returns the address of the function called name.
func (l *Lib) Func(name string) (uintptr, error) {
	cn := C.CString(name)
	defer C.free(unsafe.Pointer(cn))
	a := uintptr(C.loopbench_sym(l.h, cn))
	if a == 0 {
		return 0, fmt.Errorf("loopbench: %s: no function %q: %s", l.path, name, C.GoString(C.loopbench_dlerror()))
	}
	return a, nil
}

// Close unloads the library; its functions must not run any more.
func (l *Lib) Close() error {
	if l.h == nil {
		return nil
	}
	h := l.h
	l.h = nil
	if C.loopbench_close(h) != 0 {
		return fmt.Errorf("loopbench: unload %s: %s", l.path, C.GoString(C.loopbench_dlerror()))
	}
	return nil
}

// UBPF is an eBPF program compiled by uBPF's JIT.
type UBPF struct {
	lib     *Lib
	vm      unsafe.Pointer
	destroy uintptr
	// Entry is the address of the compiled code, for Loop.
	Entry uintptr
}

// OpenUBPF loads uBPF from the shared library at path (libubpf built with
// -fPIC -shared), loads the eBPF instructions code (8 bytes each) into a
// new uBPF VM and compiles them with its JIT.
func OpenUBPF(path string, code []byte) (*UBPF, error) {
	if len(code) == 0 || len(code)%8 != 0 {
		return nil, fmt.Errorf("loopbench: ubpf: program of %d bytes, want a positive multiple of 8", len(code))
	}
	lib, err := Open(path)
	if err != nil {
		return nil, err
	}
	var fns [4]uintptr
	for i, name := range []string{"ubpf_create", "ubpf_destroy", "ubpf_load", "ubpf_compile"} {
		if fns[i], err = lib.Func(name); err != nil {
			lib.Close()
			return nil, err
		}
	}
	u := &UBPF{lib: lib, destroy: fns[1]}
	u.vm = C.loopbench_ubpf_create(C.uintptr_t(fns[0]))
	if u.vm == nil {
		lib.Close()
		return nil, errors.New("loopbench: ubpf_create failed")
	}
	cc := C.CBytes(code)
	defer C.free(cc)
	var msg *C.char
	if C.loopbench_ubpf_load(C.uintptr_t(fns[2]), u.vm, cc, C.uint32_t(len(code)), &msg) != 0 {
		err := fmt.Errorf("loopbench: ubpf_load: %s", takeMsg(msg))
		u.Close()
		return nil, err
	}
	u.Entry = uintptr(C.loopbench_ubpf_compile(C.uintptr_t(fns[3]), u.vm, &msg))
	if u.Entry == 0 {
		err := fmt.Errorf("loopbench: ubpf_compile: %s", takeMsg(msg))
		u.Close()
		return nil, err
	}
	return u, nil
}

// takeMsg returns uBPF's error message and frees it.
func takeMsg(m *C.char) string {
	if m == nil {
		return "no reason given"
	}
	defer C.free(unsafe.Pointer(m))
	return C.GoString(m)
}

// Close frees the VM and its code and unloads uBPF.
func (u *UBPF) Close() error {
	if u.vm != nil {
		C.loopbench_ubpf_destroy(C.uintptr_t(u.destroy), u.vm)
		u.vm, u.Entry = nil, 0
	}
	return u.lib.Close()
}
