package main

import "github.com/ncclbpf/ncclbpf/vm"

func init() { registerEngine("interp", func() vm.Engine { return vm.NewInterpreter() }) }
