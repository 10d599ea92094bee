package main

import (
	"github.com/ncclbpf/ncclbpf/jit/amd64"
	"github.com/ncclbpf/ncclbpf/vm"
)

func init() { registerEngine("jit", func() vm.Engine { return amd64.New() }) }
