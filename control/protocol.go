// Package control is the local control plane of libncclbpf.so: every
// process that loads the plugin serves a unix socket, named by its pid, in
// one directory per user; `ncclbpf ps|stats|map|reload` talk to it.
//
// The protocol is JSON lines: one request per line (at most MaxRequest
// bytes, newline included), one Response line back, several requests per
// connection. A request is an envelope {"v":2,"op":"map_update","args":{...}}
// whose args are the payload of that operation: each operation has its own
// Go type (payloads.go), and the server decodes the args into it, refusing
// any field it lacks. A request that cannot be parsed, is too long, names
// an unknown operation, carries another operation's fields or speaks
// another ProtocolVersion gets a Response with OK false and Error set; the
// server goes on serving. Only peers of the server's own uid are served
// (SO_PEERCRED), on top of the directory (0700) and socket (0600)
// permissions.
package control

import (
	"encoding/json"
	"time"
)

// Operations: the "op" of a request. Each has one payload type, whose doc
// says what the operation does and answers (payloads.go).
const (
	OpInfo         = "info"          // InfoQuery
	OpStats        = "stats"         // StatsQuery
	OpMaps         = "maps"          // MapList
	OpMapDump      = "map_dump"      // MapDump
	OpMapUpdate    = "map_update"    // MapUpdate
	OpMapLookup    = "map_lookup"    // MapLookup
	OpMapDelete    = "map_delete"    // MapDelete
	OpReload       = "reload"        // Reload
	OpRollback     = "rollback"      // Rollback
	OpDecisions    = "decisions"     // DecisionsQuery
	OpMapRead      = "map_read"      // MapRead
	OpAgreedUpdate = "agreed_update" // AgreedUpdate
	OpCancel       = "cancel"        // Cancel
	// Two-phase switching (twophase.go): Prepare stages a switch, which
	// happens only after Commit; Abort withdraws it. A prepared switch not
	// committed within Prepare.PrepareMS aborts itself.
	OpPrepare = "prepare" // Prepare
	OpCommit  = "commit"  // Commit
	OpAbort   = "abort"   // Abort
	OpLedger  = "ledger"  // LedgerQuery
)

// Bounds of at-seq reloads: a reload may not name a sequence more than
// MaxSeqAhead calls past the furthest communicator, nor wait longer than
// MaxActivationTimeoutMS (an armed reload holds off every other reload;
// OpCancel withdraws it).
const (
	MaxSeqAhead            = 1_000_000_000
	MaxActivationTimeoutMS = 3_600_000
)

// MaxRequest is the longest request line the server reads (policy objects
// travel base64-encoded in reload requests).
const MaxRequest = 16 << 20

// MaxPrepareMS bounds Prepare.PrepareMS; DefaultPrepareMS is used when it is 0.
const (
	MaxPrepareMS     = 600_000
	DefaultPrepareMS = 30_000
)

// Transaction states of TxResult.State.
const (
	TxPrepared  = "prepared"  // staged, waiting for the commit
	TxCommitted = "committed" // will switch at its activation call
	TxSwitched  = "switched"  // a call at or past the activation call ran the new policy
	TxLapsed    = "lapsed"    // a call reached the activation call before the commit: never switches
	TxAborted   = "aborted"
)

// TxResult is a process's answer to OpPrepare, OpCommit and OpAbort.
type TxResult struct {
	Tx    string `json:"tx"`
	State string `json:"state"`
	AtSeq uint64 `json:"at_seq"`
	// SeqMax is the furthest call of the process's communicators when it answered.
	SeqMax uint64 `json:"seq_max"`
	// LapseComm and LapseSeq: the communicator and call that lapsed it.
	LapseComm uint64 `json:"lapse_comm,omitempty"`
	LapseSeq  uint64 `json:"lapse_seq,omitempty"`
}

// KV is one raw map entry, key and value in hex (little-endian bytes as the
// map stores them).
type KV struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// Response is the line the server answers with.
type Response struct {
	OK     bool            `json:"ok"`
	Error  string          `json:"error,omitempty"`
	Info   *Info           `json:"info,omitempty"`
	Stats  *Stats          `json:"stats,omitempty"`
	Maps   []MapInfo       `json:"maps,omitempty"`
	Dump   json.RawMessage `json:"dump,omitempty"`
	Reload *ReloadResult   `json:"reload,omitempty"`
	// Decisions are the live communicators' decision records (OpDecisions).
	Decisions []CommDecisions `json:"decisions,omitempty"`
	// Entries are a map's raw contents (OpMapRead), or the entry written
	// (OpMapUpdate).
	Entries []KV `json:"entries,omitempty"`
	// MapSpec describes the map of OpMapRead.
	MapSpec *MapInfo `json:"map_spec,omitempty"`
	// Metrics answers OpMetrics.
	Metrics *Metrics `json:"metrics,omitempty"`
	// Tx answers OpPrepare, OpCommit and OpAbort.
	Tx *TxResult `json:"tx,omitempty"`
	// Ledger answers OpLedger.
	Ledger []LedgerView `json:"ledger,omitempty"`
}

// Info identifies a process and the policy it runs.
type Info struct {
	PID      int       `json:"pid"`
	Exe      string    `json:"exe,omitempty"`
	Started  time.Time `json:"started"` // when the plugin's control server started
	Running  bool      `json:"running"` // a policy is published
	Policy   string    `json:"policy,omitempty"`
	SHA256   string    `json:"sha256,omitempty"`
	Size     int       `json:"size,omitempty"`
	LoadedAt time.Time `json:"loaded_at,omitempty"`
	Attached string    `json:"attached,omitempty"` // hook=program, ...
	// LoadMessage is the first load's message (as in NCCL's log).
	LoadMessage string `json:"load_message,omitempty"`
	// PendingAtSeq is the sequence an armed at-seq reload waits for.
	PendingAtSeq *uint64 `json:"pending_at_seq,omitempty"`
	// Comms are the live communicators (at most MaxCommsListed).
	Comms []CommInfo `json:"comms,omitempty"`
	// Control is the socket's mode: "on" or "read-only".
	Control string `json:"control,omitempty"`
}

// MaxCommsListed bounds Info.Comms.
const MaxCommsListed = 256

// CommInfo describes a live communicator: what NCCL's tuner init said
// (commId is 0 before tuner ABI v5) and its getCollInfo count.
type CommInfo struct {
	ID    uint64 `json:"id"`
	Ranks uint32 `json:"ranks"`
	Nodes uint32 `json:"nodes"`
	Seq   uint64 `json:"seq"`
}

// Stats are the counters of a process.
type Stats struct {
	Info     Info          `json:"info"`
	Tuner    TunerStats    `json:"tuner"`
	Profiler ProfilerStats `json:"profiler"`
	Reload   ReloadStats   `json:"reload"`
	// Cost is filled when the request asked for a sampling window.
	Cost []HookCost `json:"cost,omitempty"`
	// Digests are the live communicators' decision digests.
	Digests []CommDigest `json:"digests,omitempty"`
}

// HookCost is the measured cost of one hook's program: one call in 64 per
// thread timed with the TSC during the window.
type HookCost struct {
	Hook     string  `json:"hook"`
	Samples  uint64  `json:"samples"`
	MeanNS   float64 `json:"mean_ns"`
	MaxNS    float64 `json:"max_ns"`
	WindowMS int64   `json:"window_ms"`
}

// TunerStats are the tuner shim's counters, over all communicators.
type TunerStats struct {
	CommsLive     uint64 `json:"comms_live"`
	CommsTotal    uint64 `json:"comms_total"`
	Calls         uint64 `json:"calls"`        // getCollInfo calls
	PolicyCalls   uint64 `json:"policy_calls"` // ... that ran a program
	Applied       uint64 `json:"applied"`
	Rejected      uint64 `json:"rejected"` // guardrail: decisions NCCL could not take, dropped
	Clamped       uint64 `json:"clamped"`  // guardrail: channel counts clamped
	ChunkCalls    uint64 `json:"chunk_calls"`
	ChunkApplied  uint64 `json:"chunk_applied"`
	ChunkRejected uint64 `json:"chunk_rejected"` // guardrail
	SeqMin        uint64 `json:"seq_min"`        // smallest getCollInfo count of a live communicator
	SeqMax        uint64 `json:"seq_max"`
	LoadStatus    int    `json:"load_status"` // 0 loaded, 1 none configured, <0 failed, 2 not yet
}

// ProfilerStats are the profiler shim's counters.
type ProfilerStats struct {
	Calls         map[string]uint64 `json:"calls"` // program calls per hook
	EventsDropped uint64            `json:"events_dropped"`
	EventsForced  uint64            `json:"events_forced"`
	Orphans       uint64            `json:"orphans"`
	Contexts      uint64            `json:"contexts"`
	Version       int               `json:"version"`
	Mask          int               `json:"mask"`
}

// ReloadStats count reloads of the process.
type ReloadStats struct {
	Reloads           uint64 `json:"reloads"`
	Failures          uint64 `json:"failures"`
	LastError         string `json:"last_error,omitempty"`
	LastPublishNS     int64  `json:"last_publish_ns"`
	MaxPublishNS      int64  `json:"max_publish_ns"`
	LastGraceNS       int64  `json:"last_grace_ns"`
	Leaked            int    `json:"leaked"` // replaced bundles kept: no grace period possible
	ForcedActivations uint64 `json:"forced_activations"`
	LastActivated     string `json:"last_activated,omitempty"`
	LiveBundles       int64  `json:"live_bundles"`
	Previous          string `json:"previous,omitempty"` // what rollback would load
}

// MapInfo describes one map of the running bundle.
type MapInfo struct {
	Name       string `json:"name"`
	Type       string `json:"type"`
	KeySize    uint32 `json:"key_size"`
	ValueSize  uint32 `json:"value_size"`
	MaxEntries uint32 `json:"max_entries"`
	Frozen     bool   `json:"frozen,omitempty"`
	// Agreed: programs may only read it (BPF_F_RDONLY_PROG); the control
	// plane writes it at an agreed call sequence (OpAgreedUpdate).
	Agreed bool `json:"agreed,omitempty"`
}

// ReloadResult describes a successful reload.
type ReloadResult struct {
	Policy    string   `json:"policy"`
	SHA256    string   `json:"sha256"`
	Attached  string   `json:"attached"`
	Reused    []string `json:"reused,omitempty"` // maps kept with their contents
	LoadNS    int64    `json:"load_ns"`          // load, verify, compile
	PublishNS int64    `json:"publish_ns"`
	GraceNS   int64    `json:"grace_ns"`
	Pending   bool     `json:"pending,omitempty"` // at-seq: armed, not yet active everywhere
	AtSeq     uint64   `json:"at_seq,omitempty"`
}

// Errorf-style helper for handlers.
func errResponse(err error) *Response { return &Response{Error: err.Error()} }
