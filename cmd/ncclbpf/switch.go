package main

import (
	"os"
	"time"

	"github.com/ncclbpf/ncclbpf/control"
	"github.com/ncclbpf/ncclbpf/internal/ctl"
	_ "github.com/ncclbpf/ncclbpf/internal/etcdv3" // etcd:// through etcd's own client
	"github.com/spf13/pflag"
)

// storeFlags declares --store, --job and --rank-timeout (--expect is the
// command's own).
func storeFlags(fs *pflag.FlagSet, o *ctl.StoreOptions) {
	fs.StringVar(&o.URL, "store", os.Getenv(control.EnvStore), "the job's `STORE`: tcpstore (MASTER_ADDR:MASTER_PORT), tcpstore://HOST:PORT, etcd://HOST:PORT (default $NCCLBPF_STORE)")
	fs.StringVar(&o.Job, "job", "", "the job's `ID` in the store (default $NCCLBPF_JOB, else $TORCHELASTIC_RUN_ID)")
	fs.DurationVar(&o.RankTimeout, "rank-timeout", 10*time.Second, "with --store: the longest wait (`D`) for each rank's answer in each phase")
}
