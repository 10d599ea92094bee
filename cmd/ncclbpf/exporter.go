package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/ncclbpf/ncclbpf/control"
	"github.com/ncclbpf/ncclbpf/internal/exporter"
	"github.com/spf13/pflag"
)

// The glue of `ncclbpf exporter`: flags in, exporter.Options out; the
// work is in package exporter.

func init() {
	register(&command{
		Use:     "exporter [--listen ADDR] [--dir DIR] [--host NAME] [--timeout D]",
		Summary: "serve the metrics of every ncclbpf process of this node to Prometheus",
		Help: `One exporter per node: at every scrape it finds the processes through their
control sockets and reads their counters (a read-only operation that copies
what the plugin's hot path counts; NCCL's threads are not involved).
Metrics: docs/metrics.md. Default port 9478.`,
		Examples: []string{"ncclbpf exporter", "ncclbpf exporter --listen 127.0.0.1:9478"},
		Setup: func(fs *pflag.FlagSet) runFunc {
			o := &exporter.Options{}
			fs.StringVar(&o.Dir, "dir", control.DefaultDir(os.Getenv), "control socket `DIR` ($"+control.EnvDir+")")
			fs.StringVar(&o.Listen, "listen", exporter.DefaultListen, "`ADDR` to serve /metrics on")
			fs.StringVar(&o.Host, "host", "", "the host label (`NAME`; default: the host name)")
			fs.DurationVar(&o.Timeout, "timeout", 2*time.Second, "how long a process may take to answer a scrape (`D`)")
			return func(e *env, args []string) error {
				if len(args) != 0 {
					return usageErrorf("no arguments expected, got %q", args)
				}
				return serveExporter(e, *o)
			}
		},
	})
}

// serveExporter runs the exporter with parsed options until SIGINT or
// SIGTERM.
func serveExporter(e *env, o exporter.Options) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	o.Ready = func(a net.Addr) { fmt.Fprintf(e.Stdout, "serving metrics on http://%s/metrics\n", a) }
	return exporter.Serve(ctx, o)
}
