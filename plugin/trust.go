package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"

	"github.com/ncclbpf/ncclbpf/internal/config"

	"github.com/ncclbpf/ncclbpf/internal/envconfig"
)

// What the control socket lets a peer do (docs/operators-guide.md, "Trust
// model"). Any process of the job's user may connect; NCCLBPF_CONTROL
// chooses how much it may change, NCCLBPF_RELOAD_ALLOW which objects a
// reload (control socket or file watch) may load.

// Environment variables of the trust model.
const (
	envControl     = envconfig.Control
	envReloadAllow = envconfig.ReloadAllow
)

// reloadAllow is the digest allowlist of reloads; nil: any verified object.
var (
	allowOnce sync.Once
	allowList map[string]bool
	allowErr  error
)

// maxAllowFile bounds a file of digests.
const maxAllowFile = 1 << 20

// parseAllow reads NCCLBPF_RELOAD_ALLOW: SHA-256 digests (hex) separated by
// commas or spaces; an entry that starts with '/' or '.' names a file of
// digests, one per line ('#' starts a comment).
func parseAllow(v string) (map[string]bool, error) {
	if strings.TrimSpace(v) == "" {
		return nil, nil
	}
	out := map[string]bool{}
	add := func(where, d string) error {
		d = strings.ToLower(strings.TrimPrefix(strings.TrimSpace(d), "sha256:"))
		if b, err := hex.DecodeString(d); err != nil || len(b) != sha256.Size {
			return fmt.Errorf("%s: %s: %q is not a SHA-256 digest (64 hex digits)", envReloadAllow, where, d)
		}
		out[d] = true
		return nil
	}
	for _, item := range strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\n' }) {
		if strings.HasPrefix(item, "/") || strings.HasPrefix(item, ".") {
			b, err := config.ReadRegularFile(item, maxAllowFile)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", envReloadAllow, err)
			}
			for i, l := range strings.Split(string(b), "\n") {
				l, _, _ = strings.Cut(l, "#")
				for _, d := range strings.Fields(l) {
					if err := add(fmt.Sprintf("%s line %d", item, i+1), d); err != nil {
						return nil, err
					}
				}
			}
			continue
		}
		if err := add("entry", item); err != nil {
			return nil, err
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: %q lists no digest (unset it to allow any verified object)", envReloadAllow, v)
	}
	return out, nil
}

// checkAllowed refuses a reload of obj whose digest the allowlist does not
// list. A broken allowlist refuses every reload.
func checkAllowed(obj []byte) error {
	allowOnce.Do(func() { allowList, allowErr = parseAllow(cGetenv(envReloadAllow)) })
	if allowErr != nil {
		return fmt.Errorf("refused: %v", allowErr)
	}
	if allowList == nil {
		return nil
	}
	sum := sha256.Sum256(obj)
	d := hex.EncodeToString(sum[:])
	if !allowList[d] {
		return fmt.Errorf("refused: sha256 %s is not in %s", d, envReloadAllow)
	}
	return nil
}

// writable refuses operations that change the job on a read-only socket.
func writable(op string) error {
	if ctlMode == envconfig.ControlReadOnly {
		return fmt.Errorf("%s: refused: this process serves its control socket read-only (%s=ro); only info, stats and map dumps are answered", op, envControl)
	}
	return nil
}
