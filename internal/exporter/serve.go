package exporter

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// DefaultListen is where the exporter serves by default: port 9478, in
// the exporters' range (9100-9999). Prometheus's list of default port
// allocations has no free port left in that range, so a node that runs
// another exporter on 9478 needs --listen.
const DefaultListen = ":9478"

// Options configure Serve.
type Options struct {
	// Dir is the control socket directory (control.DefaultDir).
	Dir string
	// Listen is the address to serve on (DefaultListen if empty).
	Listen string
	// Host is the host label (os.Hostname if empty).
	Host string
	// Timeout bounds each process's answer at a scrape (2s if zero).
	Timeout time.Duration
	// Ready, if set, is called with the address listened on once serving.
	Ready func(addr net.Addr)
}

// Handler returns the HTTP handler of /metrics for o (also
// OpenMetrics, when the scraper asks for it).
func Handler(o Options) (http.Handler, error) {
	o, err := o.withDefaults()
	if err != nil {
		return nil, err
	}
	reg := prometheus.NewRegistry()
	if err := reg.Register(NewCollector(o.Dir, o.Host, o.Timeout)); err != nil {
		return nil, fmt.Errorf("exporter: %w", err)
	}
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{EnableOpenMetrics: true, ErrorHandling: promhttp.ContinueOnError}), nil
}

func (o Options) withDefaults() (Options, error) {
	if o.Dir == "" {
		return o, errors.New("exporter: no control directory")
	}
	if o.Listen == "" {
		o.Listen = DefaultListen
	}
	if o.Host == "" {
		h, err := os.Hostname()
		if err != nil {
			return o, fmt.Errorf("exporter: host name: %w (give one)", err)
		}
		o.Host = h
	}
	if o.Timeout <= 0 {
		o.Timeout = 2 * time.Second
	}
	return o, nil
}

// Serve serves /metrics (and a short page on /) until ctx is done.
func Serve(ctx context.Context, o Options) error {
	o, err := o.withDefaults()
	if err != nil {
		return err
	}
	h, err := Handler(o)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", h)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprintf(w, "ncclbpf exporter: metrics of the ncclbpf processes of %s (control directory %s) on /metrics\n", o.Host, o.Dir)
	})
	ln, err := net.Listen("tcp", o.Listen)
	if err != nil {
		return fmt.Errorf("exporter: listen on %s: %w", o.Listen, err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	if o.Ready != nil {
		o.Ready(ln.Addr())
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
		return nil
	case err := <-errc:
		return fmt.Errorf("exporter: %w", err)
	}
}
