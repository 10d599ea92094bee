package main

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/ncclbpf/ncclbpf/control"
	"github.com/ncclbpf/ncclbpf/internal/report"
	"github.com/spf13/pflag"
)

// The glue of `ncclbpf report`: flags in, reportOptions out; the work is
// in package report.

func init() {
	register(&command{
		Use:     "report [--dir DIR] [-o FILE] [--timeout D] [PID...]",
		Summary: "write one self-contained HTML page: decision map, latency versus size, policy maps",
		Help: `For the processes named (all ncclbpf processes of the directory if none):
the decision map (size bucket by collective, coloured by the outcome the
policy chose most, crossed where that cell cost more than NCCL's cheapest),
mean latency versus size per algorithm and protocol from the profiler's
histograms, and every map of the running policies. The page needs no
network: charts are inline SVG.`,
		Examples: []string{"ncclbpf report -o report.html", "ncclbpf report -o - 4242 > report.html"},
		Complete: func([]string) []string { return controlNames() },
		Setup: func(fs *pflag.FlagSet) runFunc {
			o := &reportOptions{}
			fs.StringVar(&o.Dir, "dir", control.DefaultDir(os.Getenv), "control socket `DIR` ($"+control.EnvDir+")")
			fs.StringVarP(&o.Out, "output", "o", "ncclbpf-report.html", "output `FILE` (- for standard output)")
			fs.DurationVar(&o.Timeout, "timeout", 5*time.Second, "how long a process may take to answer (`D`)")
			return func(e *env, args []string) error { return runReportCmd(e, *o, args) }
		},
	})
}

// reportOptions are the parsed options of `ncclbpf report`.
type reportOptions struct {
	Dir, Out string
	Timeout  time.Duration
	PIDs     []int
}

func runReportCmd(e *env, o reportOptions, args []string) error {
	for _, a := range args {
		pid, err := strconv.Atoi(a)
		if err != nil || pid <= 0 {
			return usageErrorf("%q is not a process id", a)
		}
		o.PIDs = append(o.PIDs, pid)
	}
	return writeReport(e, o)
}

// writeReport gathers the processes and writes the page.
func writeReport(e *env, o reportOptions) error {
	procs, warns, err := report.Gather(o.Dir, o.PIDs, o.Timeout)
	if err != nil {
		return err
	}
	host, _ := os.Hostname()
	var b bytes.Buffer
	if err := report.Write(&b, procs, report.Options{Host: host, Warnings: warns}); err != nil {
		return err
	}
	if o.Out == "-" {
		_, err := e.Stdout.Write(b.Bytes())
		return err
	}
	if err := os.WriteFile(o.Out, b.Bytes(), 0o644); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	fmt.Fprintf(e.Stdout, "wrote %s (%d processes)\n", o.Out, len(procs))
	return nil
}
