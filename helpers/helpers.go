// Package helpers names the helper functions eBPF programs may call and
// describes their prototypes. It is pure data: the verifier checks calls
// against these prototypes, the engines use them to know what a call
// returns, and package maps provides the native implementations.
//
// Ids and meanings follow libbpf's bpf_helpers.h, so policies written with
// that header call the right functions.
package helpers

import "fmt"

// ID is a helper function id, the Imm of a CALL instruction.
type ID int32

// Helper ids (the same numbers as in Linux's uapi bpf.h).
const (
	MapLookupElem     ID = 1
	MapUpdateElem     ID = 2
	MapDeleteElem     ID = 3
	KtimeGetNs        ID = 5
	TracePrintk       ID = 6 // bpf_printk: reaches NCCL's logger, rate-limited
	GetPrandomU32     ID = 7
	GetSmpProcessorID ID = 8
	RingbufOutput     ID = 130
	RingbufReserve    ID = 131
	RingbufSubmit     ID = 132
	RingbufDiscard    ID = 133
)

// ArgType says what a helper expects in one argument register.
type ArgType uint8

// Argument types.
const (
	ArgNone          ArgType = iota // unused argument
	ArgAnything                     // any initialized value
	ArgScalar                       // any scalar (not a pointer)
	ArgConstMapPtr                  // a map handle (LD_IMM64 map)
	ArgPtrToMapKey                  // pointer to key_size initialized bytes of the map in arg 1
	ArgPtrToMapValue                // pointer to value_size initialized bytes of the map in arg 1
	ArgPtrToMem                     // pointer to initialized readable memory of the size in the next argument
	ArgConstSize                    // the size of the preceding ArgPtrToMem, a bounded scalar
	ArgPtrToAllocMem                // a pointer returned by RingbufReserve (not yet submitted)
)

// RetType says what a helper leaves in r0.
type RetType uint8

// Return types.
const (
	RetInteger        RetType = iota // a scalar
	RetVoid                          // nothing useful: r0 becomes an unknown scalar
	RetMapValueOrNull                // pointer to value_size bytes of the map in arg 1, or 0
	RetAllocMemOrNull                // pointer to as many bytes as arg 2 (constant), or 0
)

// Proto is the prototype of one helper.
type Proto struct {
	ID   ID
	Name string
	Args [5]ArgType
	Ret  RetType
}

var protos = map[ID]*Proto{
	MapLookupElem:     {MapLookupElem, "bpf_map_lookup_elem", [5]ArgType{ArgConstMapPtr, ArgPtrToMapKey}, RetMapValueOrNull},
	MapUpdateElem:     {MapUpdateElem, "bpf_map_update_elem", [5]ArgType{ArgConstMapPtr, ArgPtrToMapKey, ArgPtrToMapValue, ArgScalar}, RetInteger},
	MapDeleteElem:     {MapDeleteElem, "bpf_map_delete_elem", [5]ArgType{ArgConstMapPtr, ArgPtrToMapKey}, RetInteger},
	KtimeGetNs:        {KtimeGetNs, "bpf_ktime_get_ns", [5]ArgType{}, RetInteger},
	TracePrintk:       {TracePrintk, "bpf_trace_printk", [5]ArgType{ArgPtrToMem, ArgConstSize, ArgAnything, ArgAnything, ArgAnything}, RetInteger},
	GetPrandomU32:     {GetPrandomU32, "bpf_get_prandom_u32", [5]ArgType{}, RetInteger},
	GetSmpProcessorID: {GetSmpProcessorID, "bpf_get_smp_processor_id", [5]ArgType{}, RetInteger},
	RingbufOutput:     {RingbufOutput, "bpf_ringbuf_output", [5]ArgType{ArgConstMapPtr, ArgPtrToMem, ArgConstSize, ArgScalar}, RetInteger},
	RingbufReserve:    {RingbufReserve, "bpf_ringbuf_reserve", [5]ArgType{ArgConstMapPtr, ArgConstSize, ArgScalar}, RetAllocMemOrNull},
	RingbufSubmit:     {RingbufSubmit, "bpf_ringbuf_submit", [5]ArgType{ArgPtrToAllocMem, ArgScalar}, RetVoid},
	RingbufDiscard:    {RingbufDiscard, "bpf_ringbuf_discard", [5]ArgType{ArgPtrToAllocMem, ArgScalar}, RetVoid},
}

// Lookup returns the prototype of helper id, or nil if there is none.
func Lookup(id ID) *Proto { return protos[id] }

// All returns every known prototype, in id order.
func All() []*Proto {
	out := make([]*Proto, 0, len(protos))
	for id := ID(0); len(out) < len(protos); id++ {
		if p := protos[id]; p != nil {
			out = append(out, p)
		}
	}
	return out
}

func (id ID) String() string {
	if p := protos[id]; p != nil {
		return p.Name
	}
	return fmt.Sprintf("helper#%d", int32(id))
}

// NumArgs returns how many argument registers p reads.
func (p *Proto) NumArgs() int {
	n := 0
	for i, a := range p.Args {
		if a != ArgNone {
			n = i + 1
		}
	}
	return n
}
