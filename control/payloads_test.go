package control

import (
	"reflect"
	"strings"
	"testing"
)

// TestEveryOpHasOnePayload: each operation has exactly one payload type,
// whose Op names it back, and a filled payload survives the request line
// (EncodeRequest, then ParseRequest) unchanged.
func TestEveryOpHasOnePayload(t *testing.T) {
	at, one := uint64(40), uint64(7)
	filled := []Payload{
		&InfoQuery{},
		&StatsQuery{SampleMS: 250},
		&MapList{},
		&MapDump{Map: "hits"},
		&MapUpdate{Map: "hits", Key: "00000000", Value: "0100000000000000", Force: true},
		&MapUpdate{Map: "hits", Args: []string{"0", "1"}},
		&MapLookup{Map: "hits", Args: []string{"0"}},
		&MapDelete{Map: "hits", Args: []string{"0"}, Force: true},
		&Reload{Object: []byte("\x7fELF"), Name: "a.o", Vars: "x=1", AtSeq: &at, CommAtSeq: map[string]uint64{"0x7f3a": 50}, TimeoutMS: 1000},
		&Rollback{Vars: "x=2", AtSeq: &at, TimeoutMS: 5},
		&DecisionsQuery{},
		&MapRead{Map: "agreed"},
		&AgreedUpdate{Map: "agreed", Entries: []KV{{Key: "00", Value: "01"}}, AtSeq: &one, TimeoutMS: 9},
		&Cancel{},
		&Prepare{Tx: "t1", PrepareMS: 100, Map: "agreed", Entries: []KV{{Key: "00", Value: "01"}}, AtSeq: &at},
		&Prepare{Tx: "t2", Object: []byte("obj"), Name: "b.o", Vars: "y=2", AtSeq: &at, CommAtSeq: map[string]uint64{"0x1": 60}},
		&Commit{Tx: "t1"},
		&Abort{Tx: "t1"},
		&LedgerQuery{Comm: "0x7f3a", RecordsFrom: 1, RecordsTo: 9},
		&MetricsQuery{},
	}
	covered := map[string]bool{}
	for _, p := range filled {
		covered[p.Op()] = true
		line, err := EncodeRequest(p)
		if err != nil {
			t.Fatalf("%s: encode: %v", p.Op(), err)
		}
		if len(line) >= MaxRequest {
			t.Fatalf("%s: %d bytes", p.Op(), len(line))
		}
		got, err := ParseRequest(line)
		if err != nil {
			t.Fatalf("%s: %s: %v", p.Op(), line, err)
		}
		if !reflect.DeepEqual(got, p) {
			t.Errorf("%s: round trip through %s gave %#v, want %#v", p.Op(), line, got, p)
		}
	}
	types := map[reflect.Type]string{}
	for _, op := range Ops() {
		if !covered[op] {
			t.Errorf("op %q has no payload in this table", op)
		}
		p, ok := NewPayload(op)
		if !ok || p.Op() != op {
			t.Fatalf("NewPayload(%q) = %T, %v", op, p, ok)
		}
		tp := reflect.TypeOf(p)
		if other, dup := types[tp]; dup {
			t.Errorf("ops %q and %q share the payload type %v", other, op, tp)
		}
		types[tp] = op
	}
	if len(Ops()) != 18 {
		t.Errorf("%d ops, want the 18 of protocol.go and metrics.go: %v", len(Ops()), Ops())
	}
	if _, ok := NewPayload("frobnicate"); ok {
		t.Error("NewPayload knows an op that does not exist")
	}
}

// TestOtherOpsFieldsRefused: a field of one operation sent with another
// is refused, naming the field and the fields the operation takes.
func TestOtherOpsFieldsRefused(t *testing.T) {
	for _, tc := range []struct{ line, want string }{
		{`{"v":2,"op":"commit","args":{"tx":"t","object":"AA=="}}`, `commit args: json: unknown field "object" (commit takes: tx)`},
		{`{"v":2,"op":"map_lookup","args":{"map":"m","args":["1"],"value":"00"}}`, `unknown field "value" (map_lookup takes: map, args)`},
		{`{"v":2,"op":"cancel","args":{"at_seq":5}}`, `cancel args: json: unknown field "at_seq" (cancel takes: no field)`},
		{`{"v":2,"op":"reload","args":{"object":"AA==","tx":"t"}}`, `unknown field "tx" (reload takes: object, name, vars, at_seq, comm_at_seq, timeout_ms)`},
		{`{"v":2,"op":"ledger","args":{"comm":"zz"}}`, `bad request: ledger: `},
		{`{"v":2,"op":"nope","args":{}}`, `unknown op "nope" (have: abort, agreed_update, cancel, commit, decisions, info, ledger, map_delete, map_dump, map_lookup, map_read, map_update, maps, metrics, prepare, reload, rollback, stats)`},
	} {
		_, err := ParseRequest([]byte(tc.line))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want an error containing %q", tc.line, err, tc.want)
		}
	}
}

// TestOldLibraryAnswer: a process of protocol version 1 refuses the "v" of
// the envelope; the client says the versions differ.
func TestOldLibraryAnswer(t *testing.T) {
	err := answerError(`bad request: json: unknown field "v"`)
	if err == nil || !strings.Contains(err.Error(), "control protocol version 1, this ncclbpf version 2") {
		t.Errorf("got %v", err)
	}
	if err := answerError("map hits: no entry"); err == nil || err.Error() != "map hits: no entry" {
		t.Errorf("an ordinary refusal became %v", err)
	}
}
