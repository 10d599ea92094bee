package main

import (
	"github.com/ncclbpf/ncclbpf/jit/native"
	"github.com/ncclbpf/ncclbpf/vm"
)

// This file registers the running architecture's JIT as an engine.
func init() { registerEngine("jit", func() vm.Engine { return native.New() }) } // the running architecture's JIT
