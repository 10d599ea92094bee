// Package offline is what ncclbpf verify and run do with a policy object,
// with no GPU, no NCCL and no running process: verify every program as the
// plugin would load it (Verify), and run one program on the interpreter or
// the JIT on a context built from a description of its inputs (Run) —
// typical values of the hook, collective, size, ranks, --set FIELD=VALUE,
// the tuner's cost table — then print r0, every output field with what it
// means, what the tuner host would do with the decision, and the maps the
// run changed.
//
// It is the engine behind the command line, not an API for policy authors:
// its options are spelled as the command's flags, and an error about how a
// run was asked for is a cli.UsageError.
package offline
