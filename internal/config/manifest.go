package config

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// ManifestSuffix names the activation manifest of a policy object: the
// file OBJ.activate next to OBJ.
const ManifestSuffix = ".activate"

// Manifest is an activation manifest: the absolute call sequence at which
// every communicator switches to the object next to it, so that every node
// given the same object and manifest switches at the same collective,
// whenever each of them sees the files. Format, one setting per line, '#'
// starts a comment:
//
//	at_seq = 250000          # every communicator: calls with call_seq >= 250000 use the new policy
//	comm.0x7f3a9c1e = 260000 # this communicator (NCCL's comm id, hex) at its own call instead
//	timeout = 10m            # longest wait for every communicator to pass its call (default 5m)
//
// at_seq is required; at most 16 communicators may have their own line.
type Manifest struct {
	AtSeq   uint64
	CommAt  map[uint64]uint64
	Timeout string // a Go duration, "" for the default
}

// ManifestPath returns the manifest path of object path obj.
func ManifestPath(obj string) string { return obj + ManifestSuffix }

// ErrNoManifest says that an object has no activation manifest.
var ErrNoManifest = errors.New("no activation manifest")

// ReadManifest reads the manifest next to obj: ErrNoManifest (wrapped) if
// there is none, a parse error naming the file and line otherwise.
func ReadManifest(obj string) (*Manifest, error) {
	path := ManifestPath(obj)
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%s: %w", path, ErrNoManifest)
	}
	if err != nil {
		return nil, err
	}
	m, err := ParseManifest(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return m, nil
}

// ParseManifest parses manifest text.
func ParseManifest(b []byte) (*Manifest, error) {
	m := &Manifest{CommAt: map[uint64]uint64{}}
	haveAt := false
	sc := bufio.NewScanner(bytes.NewReader(b))
	for line := 1; sc.Scan(); line++ {
		text, _, _ := strings.Cut(sc.Text(), "#")
		text = strings.TrimSpace(text)
		if text == "" {
			continue
		}
		k, v, ok := strings.Cut(text, "=")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if !ok || k == "" || v == "" {
			return nil, fmt.Errorf("line %d: %q: want key = value", line, text)
		}
		switch {
		case k == "at_seq":
			n, err := strconv.ParseUint(v, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("line %d: at_seq %q: want an absolute call sequence number", line, v)
			}
			m.AtSeq, haveAt = n, true
		case k == "timeout":
			m.Timeout = v
		case strings.HasPrefix(k, "comm."):
			id, err := strconv.ParseUint(strings.TrimPrefix(strings.TrimPrefix(k, "comm."), "0x"), 16, 64)
			if err != nil {
				return nil, fmt.Errorf("line %d: %q: want comm.<communicator id in hex>", line, k)
			}
			n, err := strconv.ParseUint(v, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("line %d: %s %q: want an absolute call sequence number", line, k, v)
			}
			if _, dup := m.CommAt[id]; dup {
				return nil, fmt.Errorf("line %d: communicator %#x given twice", line, id)
			}
			m.CommAt[id] = n
		default:
			return nil, fmt.Errorf("line %d: unknown key %q (have: at_seq, comm.<id>, timeout)", line, k)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if !haveAt {
		return nil, errors.New("no at_seq line: the activation sequence of every communicator is required")
	}
	if len(m.CommAt) > 16 {
		return nil, fmt.Errorf("%d communicators with their own line; at most 16", len(m.CommAt))
	}
	return m, nil
}
