// Command ctxgen writes hook/zz_contexts.go, the Go description of the
// hook contexts, from the C headers (see package internal/ctxgen). It runs
// from hook/'s go:generate line:
//
//	go run ../internal/ctxgen/cmd/ctxgen -include ../include -o zz_contexts.go
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/ncclbpf/ncclbpf/internal/ctxgen"
)

func main() {
	include := flag.String("include", "../include", "the folder of ncclbpf.h and the hook headers")
	out := flag.String("o", "zz_contexts.go", "the Go file to write")
	pkg := flag.String("package", "hook", "the package of the Go file")
	flag.Parse()
	src, err := ctxgen.Generate(*include, *pkg, ctxgen.Contexts)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := os.WriteFile(*out, src, 0o644); err != nil {
		fmt.Fprintf(os.Stderr, "ctxgen: %v\n", err)
		os.Exit(1)
	}
}
