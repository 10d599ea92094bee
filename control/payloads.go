package control

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
)

// ProtocolVersion is the version of the request envelope ("v"). A request
// of another version (or with none: the flat requests of version 1) is
// refused with an error that names both versions, so that a CLI and a
// library of different releases say so instead of misreading each other.
const ProtocolVersion = 2

// Payload is the request of one operation: each operation has its own type
// (the registry payloadTypes), holding only the fields that operation
// reads. Op names the operation; the server decodes a request's "args" into
// the type its "op" names and checks it before the handler sees it.
type Payload interface {
	Op() string
	// check tells what is wrong with the request, before any handler runs.
	check() error
}

// envelope is one request line: {"v":2,"op":"map_update","args":{...}}.
type envelope struct {
	V    int             `json:"v"`
	Op   string          `json:"op"`
	Args json.RawMessage `json:"args,omitempty"`
}

// payloadTypes maps every operation to a new value of its payload type.
var payloadTypes = map[string]func() Payload{
	OpInfo:         func() Payload { return new(InfoQuery) },
	OpStats:        func() Payload { return new(StatsQuery) },
	OpMaps:         func() Payload { return new(MapList) },
	OpMapDump:      func() Payload { return new(MapDump) },
	OpMapUpdate:    func() Payload { return new(MapUpdate) },
	OpMapLookup:    func() Payload { return new(MapLookup) },
	OpMapDelete:    func() Payload { return new(MapDelete) },
	OpReload:       func() Payload { return new(Reload) },
	OpRollback:     func() Payload { return new(Rollback) },
	OpDecisions:    func() Payload { return new(DecisionsQuery) },
	OpMapRead:      func() Payload { return new(MapRead) },
	OpAgreedUpdate: func() Payload { return new(AgreedUpdate) },
	OpCancel:       func() Payload { return new(Cancel) },
	OpPrepare:      func() Payload { return new(Prepare) },
	OpCommit:       func() Payload { return new(Commit) },
	OpAbort:        func() Payload { return new(Abort) },
	OpLedger:       func() Payload { return new(LedgerQuery) },
	OpMetrics:      func() Payload { return new(MetricsQuery) },
}

// Ops lists the operations the server knows, sorted.
func Ops() []string {
	out := make([]string, 0, len(payloadTypes))
	for op := range payloadTypes {
		out = append(out, op)
	}
	sort.Strings(out)
	return out
}

// NewPayload is a new, empty payload of operation op; false if op is unknown.
func NewPayload(op string) (Payload, bool) {
	f, ok := payloadTypes[op]
	if !ok {
		return nil, false
	}
	return f(), true
}

// EncodeRequest is the request line (without the newline) that carries p.
func EncodeRequest(p Payload) ([]byte, error) {
	if p == nil {
		return nil, errors.New("no request")
	}
	args, err := json.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p.Op(), err)
	}
	if bytes.Equal(args, []byte("{}")) {
		args = nil
	}
	return json.Marshal(envelope{V: ProtocolVersion, Op: p.Op(), Args: args})
}

// ParseRequest decodes and checks one request line: the envelope, then its
// "args" as the payload type of its "op", with no field that type lacks.
func ParseRequest(line []byte) (Payload, error) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return nil, errors.New("bad request: empty line (want one JSON object per line)")
	}
	var env envelope
	if err := decodeStrict(line, &env); err != nil {
		if v := probeVersion(line); v != ProtocolVersion {
			return nil, versionError(v)
		}
		return nil, fmt.Errorf("bad request: %w", err)
	}
	if env.V != ProtocolVersion {
		return nil, versionError(env.V)
	}
	if env.Op == "" {
		return nil, errors.New("bad request: no \"op\"")
	}
	p, ok := NewPayload(env.Op)
	if !ok {
		return nil, fmt.Errorf("bad request: unknown op %q (have: %s)", env.Op, strings.Join(Ops(), ", "))
	}
	if len(env.Args) > 0 && !bytes.Equal(env.Args, []byte("null")) {
		if err := decodeStrict(env.Args, p); err != nil {
			return nil, fmt.Errorf("bad request: %s args: %w (%s takes: %s)", env.Op, err, env.Op, fieldList(p))
		}
	}
	if err := p.check(); err != nil {
		sep := ": "
		if m := err.Error(); strings.HasPrefix(m, "needs ") || strings.HasPrefix(m, "takes ") {
			sep = " " // "map_dump needs \"map\""
		}
		return nil, fmt.Errorf("bad request: %s%s%w", env.Op, sep, err)
	}
	return p, nil
}

// decodeStrict decodes one JSON object into v, refusing unknown fields and
// anything after the object.
func decodeStrict(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("data after the JSON object")
	}
	return nil
}

// probeVersion reads "v" of a line that did not decode as an envelope: 0
// when it has none (version 1 had none) or is not JSON.
func probeVersion(line []byte) int {
	var p struct {
		V int `json:"v"`
	}
	if json.Unmarshal(line, &p) != nil {
		return ProtocolVersion // not JSON at all: the decode error says more
	}
	return p.V
}

func versionError(v int) error {
	got := fmt.Sprintf("protocol version %d", v)
	if v == 0 {
		got = "protocol version 1 (no \"v\")"
	}
	return fmt.Errorf("bad request: %s; this process speaks protocol version %d: use the ncclbpf command of the same release as the libncclbpf.so the process loaded", got, ProtocolVersion)
}

// fieldList names the JSON fields of payload p, for error messages.
func fieldList(p Payload) string {
	names := jsonFields(p)
	if len(names) == 0 {
		return "no field"
	}
	return strings.Join(names, ", ")
}

// jsonFields are the JSON names of the fields of the struct p points to.
func jsonFields(p Payload) []string { return structFields(reflect.TypeOf(p).Elem()) }

// structFields are the JSON names of struct t's fields, those of embedded
// structs included.
func structFields(t reflect.Type) []string {
	var out []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if f.Anonymous && f.Type.Kind() == reflect.Struct {
			out = append(out, structFields(f.Type)...)
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name != "" && name != "-" {
			out = append(out, name)
		}
	}
	return out
}

// InfoQuery asks for the process and its policy (OpInfo): Response.Info.
type InfoQuery struct{}

// StatsQuery asks for the counters (OpStats): Response.Stats.
type StatsQuery struct {
	// SampleMS first measures the cost of each hook's program for that
	// long (at most 60000): Stats.Cost.
	SampleMS int64 `json:"sample_ms,omitempty"`
}

// MapList asks for the maps of the running bundle (OpMaps): Response.Maps.
type MapList struct{}

// MapDump asks for the contents of Map (OpMapDump): Response.Dump.
type MapDump struct {
	Map string `json:"map"`
}

// MapUpdate writes one entry of Map (OpMapUpdate): Response.Entries (what
// was written).
type MapUpdate struct {
	Map string `json:"map"`
	// Key and Value are hex, little-endian as the map stores them.
	Key   string `json:"key,omitempty"`
	Value string `json:"value,omitempty"`
	// Args, instead of Key and Value, are the key and value as a user
	// typed them (decimal or typed by the map's BTF, bpftool's key/value
	// hex forms): the process reads them with the map's types
	// (maps.ParseKeyValue).
	Args []string `json:"args,omitempty"`
	// Force writes an agreed map with no activation point: at once, on
	// this process only (ranks may then decide differently until they all
	// have the value).
	Force bool `json:"force,omitempty"`
}

// MapLookup reads the entry of Map whose key Args give, as a user typed it
// (OpMapLookup): Response.Dump (that one entry).
type MapLookup struct {
	Map  string   `json:"map"`
	Args []string `json:"args"`
}

// MapDelete deletes the entry of Map whose key Args give (OpMapDelete):
// Response.Entries (the key deleted).
type MapDelete struct {
	Map  string   `json:"map"`
	Args []string `json:"args"`
	// Force deletes from an agreed map at once, on this process only.
	Force bool `json:"force,omitempty"`
}

// checkActivation checks when a switch takes effect: at call atSeq of every
// communicator, commAtSeq of some (by id in hex), waiting at most timeoutMS.
func checkActivation(atSeq *uint64, commAtSeq map[string]uint64, timeoutMS int64) error {
	if len(commAtSeq) > 0 && atSeq == nil {
		return errors.New("comm_at_seq needs at_seq (the sequence of the other communicators)")
	}
	for k := range commAtSeq {
		if _, err := ParseCommKey(k); err != nil {
			return fmt.Errorf("comm_at_seq: %w", err)
		}
	}
	if timeoutMS < 0 || timeoutMS > MaxActivationTimeoutMS {
		return fmt.Errorf("timeout_ms must be within 0..%d", MaxActivationTimeoutMS)
	}
	return nil
}

// Reload loads Object in place of the running policy (OpReload):
// Response.Reload.
type Reload struct {
	// Object is the ELF object; Name identifies it (a path).
	Object []byte `json:"object"`
	Name   string `json:"name,omitempty"`
	// Vars sets `volatile const` globals of the object ("name=value,...",
	// as NCCLBPF_POLICY_CONFIG).
	Vars string `json:"vars,omitempty"`
	// AtSeq makes the switch take effect at this per-communicator call
	// sequence (tuner calls with call_seq >= AtSeq use the new code).
	AtSeq *uint64 `json:"at_seq,omitempty"`
	// CommAtSeq, with AtSeq, gives communicators (by id in hex, "0x7f3a")
	// their own activation call (an activation manifest).
	CommAtSeq map[string]uint64 `json:"comm_at_seq,omitempty"`
	// TimeoutMS bounds the wait for every communicator to reach AtSeq.
	TimeoutMS int64 `json:"timeout_ms,omitempty"`
}

// Rollback reloads the object that ran before the last reload
// (OpRollback): Response.Reload.
type Rollback struct {
	// Vars sets `volatile const` globals of that object, as in Reload.
	Vars string `json:"vars,omitempty"`
	// AtSeq makes the switch take effect at this per-communicator call
	// sequence (tuner calls with call_seq >= AtSeq use the new code).
	AtSeq *uint64 `json:"at_seq,omitempty"`
	// CommAtSeq, with AtSeq, gives communicators (by id in hex, "0x7f3a")
	// their own activation call (an activation manifest).
	CommAtSeq map[string]uint64 `json:"comm_at_seq,omitempty"`
	// TimeoutMS bounds the wait for every communicator to reach AtSeq.
	TimeoutMS int64 `json:"timeout_ms,omitempty"`
}

// AsPrepare is the two-phase form of r: a Prepare of the same object and
// activation, as switch tx (TwoPhase names it when tx is empty).
func (r *Reload) AsPrepare(tx string) *Prepare {
	return &Prepare{Tx: tx, Object: r.Object, Name: r.Name, Vars: r.Vars,
		AtSeq: r.AtSeq, CommAtSeq: r.CommAtSeq, TimeoutMS: r.TimeoutMS}
}

// DecisionsQuery asks for the communicators' decision records
// (OpDecisions): Response.Decisions.
type DecisionsQuery struct{}

// MapRead asks for Map's raw contents (OpMapRead): Response.Entries (hex
// keys and values) and Response.MapSpec.
type MapRead struct {
	Map string `json:"map"`
}

// AgreedUpdate writes Entries into the agreed map Map at call AtSeq of
// every communicator (OpAgreedUpdate): Response.Reload.
type AgreedUpdate struct {
	Map     string `json:"map"`
	Entries []KV   `json:"entries"`
	// AtSeq is the call every rank switches at; TimeoutMS bounds the wait.
	AtSeq     *uint64 `json:"at_seq,omitempty"`
	TimeoutMS int64   `json:"timeout_ms,omitempty"`
	// Force, instead of AtSeq, writes at once on this process only.
	Force bool `json:"force,omitempty"`
}

// Cancel withdraws an armed at-seq reload (OpCancel): Response.Reload (the
// policy kept).
type Cancel struct{}

// Prepare stages a two-phase switch (OpPrepare, twophase.go): the process
// checks that its communicators are before AtSeq and stages either a reload
// of Object or an agreed update of Map with Entries, which happens only
// after a Commit of Tx: Response.Tx.
type Prepare struct {
	// Tx names the switch; it is also the id of the epoch it opens.
	Tx string `json:"tx"`
	// PrepareMS bounds how long the prepared switch waits for its commit
	// before it aborts itself (0: DefaultPrepareMS).
	PrepareMS int64 `json:"prepare_ms,omitempty"`
	// Object, Name and Vars: a reload, as in Reload.
	Object []byte `json:"object,omitempty"`
	Name   string `json:"name,omitempty"`
	Vars   string `json:"vars,omitempty"`
	// Map and Entries: an agreed update, as in AgreedUpdate.
	Map     string `json:"map,omitempty"`
	Entries []KV   `json:"entries,omitempty"`
	// AtSeq makes the switch take effect at this per-communicator call
	// sequence (tuner calls with call_seq >= AtSeq use the new code).
	AtSeq *uint64 `json:"at_seq,omitempty"`
	// CommAtSeq, with AtSeq, gives communicators (by id in hex, "0x7f3a")
	// their own activation call (an activation manifest).
	CommAtSeq map[string]uint64 `json:"comm_at_seq,omitempty"`
	// TimeoutMS bounds the wait for every communicator to reach AtSeq.
	TimeoutMS int64 `json:"timeout_ms,omitempty"`
}

// Commit opens the prepared switch Tx (OpCommit): Response.Tx.
type Commit struct {
	Tx string `json:"tx"`
}

// Abort withdraws the prepared switch Tx (OpAbort): Response.Tx.
type Abort struct {
	Tx string `json:"tx"`
}

// LedgerQuery asks for the decision ledger (ledger.go) of every
// communicator, or of Comm (OpLedger): Response.Ledger.
type LedgerQuery struct {
	Comm string `json:"comm,omitempty"`
	// With RecordsTo > RecordsFrom, the decisions of those calls.
	RecordsFrom uint64 `json:"records_from,omitempty"`
	RecordsTo   uint64 `json:"records_to,omitempty"`
}

// MetricsQuery asks for the exporter's snapshot (OpMetrics): Response.Metrics.
type MetricsQuery struct{}

// Op names the operation of each payload.
func (*InfoQuery) Op() string      { return OpInfo }
func (*StatsQuery) Op() string     { return OpStats }
func (*MapList) Op() string        { return OpMaps }
func (*MapDump) Op() string        { return OpMapDump }
func (*MapUpdate) Op() string      { return OpMapUpdate }
func (*MapLookup) Op() string      { return OpMapLookup }
func (*MapDelete) Op() string      { return OpMapDelete }
func (*Reload) Op() string         { return OpReload }
func (*Rollback) Op() string       { return OpRollback }
func (*DecisionsQuery) Op() string { return OpDecisions }
func (*MapRead) Op() string        { return OpMapRead }
func (*AgreedUpdate) Op() string   { return OpAgreedUpdate }
func (*Cancel) Op() string         { return OpCancel }
func (*Prepare) Op() string        { return OpPrepare }
func (*Commit) Op() string         { return OpCommit }
func (*Abort) Op() string          { return OpAbort }
func (*LedgerQuery) Op() string    { return OpLedger }
func (*MetricsQuery) Op() string   { return OpMetrics }

// Checks of each payload, before any handler runs. Their errors follow the
// op's name ("bad request: map_dump needs ...").
func (*InfoQuery) check() error      { return nil }
func (*MapList) check() error        { return nil }
func (*DecisionsQuery) check() error { return nil }
func (*Cancel) check() error         { return nil }
func (*MetricsQuery) check() error   { return nil }
func (r *Rollback) check() error {
	return checkActivation(r.AtSeq, r.CommAtSeq, r.TimeoutMS)
}

func (r *StatsQuery) check() error {
	if r.SampleMS < 0 || r.SampleMS > 60000 {
		return errors.New("sample_ms must be within 0..60000")
	}
	return nil
}

func (r *MapDump) check() error { return needMap(r.Map) }
func (r *MapRead) check() error { return needMap(r.Map) }

func needMap(m string) error {
	if m == "" {
		return errors.New("needs \"map\"")
	}
	return nil
}

func (r *MapUpdate) check() error {
	if r.Map == "" || (len(r.Args) == 0 && (r.Key == "" || r.Value == "")) {
		return errors.New("needs \"map\", and \"key\" and \"value\" (hex) or \"args\"")
	}
	if len(r.Args) > 0 && (r.Key != "" || r.Value != "") {
		return errors.New("takes \"args\" or \"key\" and \"value\", not both")
	}
	return nil
}

func (r *MapLookup) check() error { return needMapKey(r.Map, r.Args) }
func (r *MapDelete) check() error { return needMapKey(r.Map, r.Args) }

func needMapKey(m string, args []string) error {
	if m == "" || len(args) == 0 {
		return errors.New("needs \"map\" and \"args\" (the key)")
	}
	return nil
}

func (r *Reload) check() error {
	if len(r.Object) == 0 {
		return errors.New("needs \"object\" (the ELF bytes, base64)")
	}
	return checkActivation(r.AtSeq, r.CommAtSeq, r.TimeoutMS)
}

func (r *AgreedUpdate) check() error {
	if r.Map == "" || len(r.Entries) == 0 {
		return errors.New("needs \"map\" and \"entries\"")
	}
	if r.AtSeq == nil && !r.Force {
		return errors.New("needs \"at_seq\" (the call every rank switches at) or \"force\"")
	}
	return checkActivation(r.AtSeq, nil, r.TimeoutMS)
}

func (r *Prepare) check() error {
	if r.Tx == "" || r.AtSeq == nil {
		return errors.New("needs \"tx\" and \"at_seq\"")
	}
	if (len(r.Object) == 0) == (r.Map == "") || (r.Map != "" && len(r.Entries) == 0) {
		return errors.New("needs \"object\" (a reload) or \"map\" and \"entries\" (an agreed update), not both")
	}
	if r.PrepareMS < 0 || r.PrepareMS > MaxPrepareMS {
		return fmt.Errorf("prepare_ms must be within 0..%d", MaxPrepareMS)
	}
	return checkActivation(r.AtSeq, r.CommAtSeq, r.TimeoutMS)
}

func (r *Commit) check() error { return needTx(r.Tx) }
func (r *Abort) check() error  { return needTx(r.Tx) }

func needTx(tx string) error {
	if tx == "" {
		return errors.New("needs \"tx\"")
	}
	return nil
}

func (r *LedgerQuery) check() error {
	if r.Comm != "" {
		if _, err := ParseCommKey(r.Comm); err != nil {
			return err
		}
	}
	return nil
}
