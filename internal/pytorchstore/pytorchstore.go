// Package pytorchstore starts a real PyTorch TCPStore server (Debian's
// python3-torch) for the tests: the control package's own tests and the
// end-to-end tests both talk to one (control/storetest cannot serve the
// former: it imports control).
package pytorchstore

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/ncclbpf/ncclbpf/internal/envconfig"
)

// ErrNoTorch says that no Python with PyTorch is installed.
var ErrNoTorch = errors.New("no python3 with PyTorch (Debian: apt-get install python3-torch; scripts/setup.sh does)")

// LaunchTCPStore starts control/testdata/tcpstore_server.py (under the
// checkout at root) with the first Python that has PyTorch
// ($NCCLBPF_TEST_PYTHON, then /usr/bin/python3, then python3) and returns
// its address and the function that stops it. Importing PyTorch takes
// seconds, so no Python is probed first: one without PyTorch fails at
// once, and the next is tried.
func LaunchTCPStore(root string) (addr string, stop func(), err error) {
	for _, py := range []string{os.Getenv(envconfig.TestPython), "/usr/bin/python3", "python3"} {
		if py == "" {
			continue
		}
		cmd := exec.Command(py, filepath.Join(root, "control", "testdata", "tcpstore_server.py"))
		in, _ := cmd.StdinPipe()
		out, _ := cmd.StdoutPipe()
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			continue
		}
		line, err := bufio.NewReader(out).ReadString('\n')
		if err != nil {
			in.Close()
			cmd.Wait()
			if strings.Contains(stderr.String(), "No module named") {
				continue
			}
			return "", nil, fmt.Errorf("%s: %v\n%s", py, err, stderr.String())
		}
		stop := func() { in.Close(); cmd.Process.Kill(); cmd.Wait() }
		return "127.0.0.1:" + strings.TrimSpace(line), stop, nil
	}
	return "", nil, ErrNoTorch
}
