package ctl

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/ncclbpf/ncclbpf/control"
	"github.com/ncclbpf/ncclbpf/internal/cli"
	"github.com/ncclbpf/ncclbpf/internal/config"
)

// applyManifest gives req the activation of OBJ's manifest (OBJ.activate),
// if it has one and the command line names no --at-seq. It reports whether
// it did. A manifest and --at-seq together are a usage error.
func applyManifest(w io.Writer, obj, atSeq string, timeoutSet bool, req *control.Reload) (bool, error) {
	m, err := config.ReadManifest(obj)
	if errors.Is(err, config.ErrNoManifest) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if atSeq != "" {
		return false, cli.Usagef("%s has an activation manifest (%s); --at-seq conflicts with it (use --no-manifest to ignore the file)",
			obj, config.ManifestPath(obj))
	}
	n := m.AtSeq
	req.AtSeq = &n
	if len(m.CommAt) > 0 {
		req.CommAtSeq = map[string]uint64{}
		for id, at := range m.CommAt {
			req.CommAtSeq[control.CommKey(id)] = at
		}
	}
	if m.Timeout != "" && !timeoutSet {
		d, err := time.ParseDuration(m.Timeout)
		if err != nil || d <= 0 {
			return false, fmt.Errorf("%s: timeout %q: want a duration such as 10m", config.ManifestPath(obj), m.Timeout)
		}
		req.TimeoutMS = d.Milliseconds()
	}
	fmt.Fprintf(w, "activation manifest %s: every communicator at call %d", config.ManifestPath(obj), n)
	if len(m.CommAt) > 0 {
		fmt.Fprintf(w, ", %d with their own call", len(m.CommAt))
	}
	fmt.Fprintln(w)
	return true, nil
}
