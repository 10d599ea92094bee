// Package ctl is the operator's side of the control plane of
// libncclbpf.so, behind ncclbpf ps, stats, map, reload, agree and check:
// it finds the processes of a control directory (or the ranks of a job's
// store), sends them requests (package control's protocol), runs the
// two-phase switches of reload --all --at-seq and agree, compares the
// ranks' decision ledgers, and prints what the processes answered, as text
// or JSON.
//
// It is the engine behind the command line, not an API: its options are
// spelled as the commands' flags, an error about how a command was invoked
// is a cli.UsageError, and a failure it has already printed is
// cli.ErrReported. It lives outside package control so that what only the
// operator's tool needs (printing, the etcd client) stays out of the
// plugin.
package ctl
