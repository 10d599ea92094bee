package main

import (
	"fmt"
	"sort"
	"strings"

	"github.com/ncclbpf/ncclbpf/vm"
)

// engines maps an engine name, as --engine spells it, to its constructor.
// Each engine registers itself from its own file (engine_NAME.go):
//
//	func init() { registerEngine("jit", func() vm.Engine { return amd64.New() }) }
var engines = map[string]func() vm.Engine{}

// registerEngine adds an engine constructor under name.
func registerEngine(name string, newEngine func() vm.Engine) {
	if _, dup := engines[name]; dup {
		panic(fmt.Sprintf("ncclbpf: engine %q registered twice", name))
	}
	engines[name] = newEngine
}

// engineNames returns the registered engine names, sorted.
func engineNames() []string {
	names := make([]string, 0, len(engines))
	for n := range engines {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// newEngine returns the engine called name, or a usage error that lists the
// engines that exist.
func newEngine(name string) (vm.Engine, error) {
	if mk, ok := engines[name]; ok {
		return mk(), nil
	}
	if len(engines) == 0 {
		return nil, usageErrorf("unknown engine %q: no engine is built into this binary yet", name)
	}
	return nil, usageErrorf("unknown engine %q; engines: %s", name, strings.Join(engineNames(), ", "))
}

// defaultEngine is the engine used when --engine is not given: "interp",
// the reference semantics.
const defaultEngine = "interp"
