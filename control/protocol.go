// Package control is the local control plane of libncclbpf.so: every
// process that loads the plugin serves a unix socket, named by its pid, in
// one directory per user; `ncclbpf ps|stats|map|reload` talk to it.
//
// The protocol is JSON lines: one Request per line (at most MaxRequest
// bytes, newline included), one Response line back, several requests per
// connection. A request that cannot be parsed, is too long or names an
// unknown operation gets a Response with OK false and Error set; the server
// goes on serving. Only peers of the server's own uid are served
// (SO_PEERCRED), on top of the directory (0700) and socket (0600)
// permissions.
package control

import (
	"encoding/json"
	"time"
)

// Operations of Request.Op.
const (
	OpInfo      = "info"       // policy, load time, process: Response.Info
	OpStats     = "stats"      // counters: Response.Stats
	OpMaps      = "maps"       // map list: Response.Maps
	OpMapDump   = "map_dump"   // Request.Map: Response.Dump
	OpMapUpdate = "map_update" // Request.Map, Key, Value (hex) or Args: Response.Entries (what was written)
	OpMapLookup = "map_lookup" // Request.Map, Args (the key): Response.Dump (that one entry)
	OpMapDelete = "map_delete" // Request.Map, Args (the key): Response.Entries (the key deleted)
	OpReload    = "reload"     // Request.Object (+ Name, AtSeq, TimeoutMS, Vars): Response.Reload
	OpRollback  = "rollback"   // reload the object that ran before the last reload (+ AtSeq)
	OpDecisions = "decisions"  // the communicators' decision records: Response.Decisions
	// OpMapRead: Request.Map: Response.Entries, raw (hex keys and values).
	OpMapRead = "map_read"
	// OpAgreedUpdate: Request.Map (an agreed map), Entries, AtSeq (or
	// Force): the entries take effect at call AtSeq of every communicator.
	OpAgreedUpdate = "agreed_update"
	OpCancel       = "cancel" // withdraw an armed at-seq reload: Response.Reload (the policy kept)
	// Two-phase switching (twophase.go). OpPrepare: Tx, AtSeq and either
	// Object (a reload) or Map and Entries (an agreed update): the process
	// checks that its communicators are before AtSeq and stages the switch,
	// which happens only after OpCommit (Tx); OpAbort (Tx) withdraws it. A
	// prepared switch not committed within PrepareMS aborts itself.
	OpPrepare = "prepare"
	OpCommit  = "commit"
	OpAbort   = "abort"
	// OpLedger: the decision ledger (ledger.go) of every communicator, or
	// of Comm; with RecordsTo > RecordsFrom, the decisions of those calls.
	OpLedger = "ledger"
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

// Request is one line a client sends.
type Request struct {
	Op string `json:"op"`
	// Map, Key and Value (hex, little-endian as the map stores them) for
	// the map operations.
	Map   string `json:"map,omitempty"`
	Key   string `json:"key,omitempty"`
	Value string `json:"value,omitempty"`
	// Args, instead of Key and Value, are the key and value as a user
	// typed them (decimal or typed by the map's BTF, bpftool's key/value
	// hex forms): the process reads them with the map's types
	// (maps.ParseKeyValue).
	Args []string `json:"args,omitempty"`
	// Object is the ELF object of a reload; Name identifies it (a path).
	Object []byte `json:"object,omitempty"`
	Name   string `json:"name,omitempty"`
	// Vars sets `volatile const` globals of the reloaded object
	// ("name=value,...", as NCCLBPF_POLICY_CONFIG).
	Vars string `json:"vars,omitempty"`
	// AtSeq makes a reload take effect at this per-communicator call
	// sequence (tuner calls with call_seq >= AtSeq use the new code).
	AtSeq *uint64 `json:"at_seq,omitempty"`
	// CommAtSeq, with AtSeq, gives communicators (by id in hex, "0x7f3a")
	// their own activation call (an activation manifest).
	CommAtSeq map[string]uint64 `json:"comm_at_seq,omitempty"`
	// TimeoutMS bounds the wait for every communicator to reach AtSeq.
	TimeoutMS int64 `json:"timeout_ms,omitempty"`
	// SampleMS, with OpStats, first measures the cost of each hook's
	// program for that long (at most 60000): Stats.Cost.
	SampleMS int64 `json:"sample_ms,omitempty"`
	// Entries are the key/value pairs of an agreed update.
	Entries []KV `json:"entries,omitempty"`
	// Force lets map_update and agreed_update write an agreed map with no
	// activation point: at once, on this process only (ranks may then
	// decide differently until they all have the value).
	Force bool `json:"force,omitempty"`
	// Tx names a two-phase switch (OpPrepare, OpCommit, OpAbort); it is
	// also the id of the epoch the switch opens.
	Tx string `json:"tx,omitempty"`
	// PrepareMS bounds how long a prepared switch waits for its commit.
	PrepareMS int64 `json:"prepare_ms,omitempty"`
	// Comm, RecordsFrom and RecordsTo select what OpLedger returns.
	Comm        string `json:"comm,omitempty"`
	RecordsFrom uint64 `json:"records_from,omitempty"`
	RecordsTo   uint64 `json:"records_to,omitempty"`
}

// MaxPrepareMS bounds Request.PrepareMS; DefaultPrepareMS is used when it is 0.
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
