package maps

// #include "ncclbpf_maps.h"
// static void set_sink_addr(uintptr_t fn, uintptr_t ctx) {
//   nbpf_set_log_sink((nbpf_log_fn)fn, (void *)ctx);
// }
import "C"

import (
	"strings"
	"unsafe"

	"github.com/ncclbpf/ncclbpf/helpers"
	"github.com/ncclbpf/ncclbpf/vm"
)

// helperAddrs are the native implementations, by helper id.
var helperAddrs = map[helpers.ID]unsafe.Pointer{
	helpers.MapLookupElem:     C.nbpf_h_map_lookup_elem,
	helpers.MapUpdateElem:     C.nbpf_h_map_update_elem,
	helpers.MapDeleteElem:     C.nbpf_h_map_delete_elem,
	helpers.KtimeGetNs:        C.nbpf_h_ktime_get_ns,
	helpers.TracePrintk:       C.nbpf_h_trace_printk,
	helpers.GetPrandomU32:     C.nbpf_h_get_prandom_u32,
	helpers.GetSmpProcessorID: C.nbpf_h_get_smp_processor_id,
	helpers.RingbufOutput:     C.nbpf_h_ringbuf_output,
	helpers.RingbufReserve:    C.nbpf_h_ringbuf_reserve,
	helpers.RingbufSubmit:     C.nbpf_h_ringbuf_submit,
	helpers.RingbufDiscard:    C.nbpf_h_ringbuf_discard,
}

// HelperTable returns every helper this package implements: Addr is the
// native C function, Proto comes from package helpers. The caller owns the
// returned table (a hook may remove helpers it does not allow).
func HelperTable() vm.HelperTable {
	t := make(vm.HelperTable, len(helperAddrs))
	for id, p := range helperAddrs {
		t[id] = vm.Helper{ID: id, Addr: uintptr(p), Proto: helpers.Lookup(id), ArrayLookup: id == helpers.MapLookupElem}
	}
	return t
}

// SetLogSinkC makes bpf_printk lines go to the C function fn, a
// `void fn(void *ctx, const char *line, uint32_t len)` (see nbpf_log_fn in
// ncclbpf_maps.h), called with ctx. fn == 0 restores the default sink
// (stderr). The plugin points it at NCCL's logger.
func SetLogSinkC(fn, ctx uintptr) {
	C.set_sink_addr(C.uintptr_t(fn), C.uintptr_t(ctx))
}

// CapturePrintk sends bpf_printk lines to an in-memory buffer (64 KiB;
// lines that do not fit are lost) that DrainPrintk empties, or, with
// on == false, back to stderr. For the CLI and tests.
func CapturePrintk(on bool) {
	if on {
		C.nbpf_set_log_sink(C.nbpf_log_fn(C.nbpf_capture_sink), nil)
	} else {
		C.nbpf_set_log_sink(nil, nil)
	}
}

// DrainPrintk returns and removes the lines captured so far.
func DrainPrintk() []string {
	var sb strings.Builder
	buf := make([]byte, 1<<16)
	for {
		n := C.nbpf_capture_drain((*C.char)(unsafe.Pointer(&buf[0])), C.uint32_t(len(buf)))
		sb.Write(buf[:n])
		if int(n) < len(buf) {
			break
		}
	}
	s := strings.TrimSuffix(sb.String(), "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// SetPrintkRate allows perSec bpf_printk lines per second in bursts of up
// to burst lines, across the process; perSec == 0 removes the limit.
// The default is 20 lines per second, bursts of 40.
func SetPrintkRate(perSec, burst uint32) {
	C.nbpf_printk_set_rate(C.uint32_t(perSec), C.uint32_t(burst))
}

// PrintkDropped returns how many bpf_printk lines the rate limit dropped.
func PrintkDropped() uint64 { return uint64(C.nbpf_printk_dropped()) }

// FormatPrintk formats like bpf_printk (without rate limit or sink): fmt
// as the program passes it (with its terminating NUL) and up to three
// arguments. It returns the line and false when the format is refused.
func FormatPrintk(fmt []byte, args ...uint64) (string, bool) {
	var a [3]C.uint64_t
	for i := 0; i < len(args) && i < 3; i++ {
		a[i] = C.uint64_t(args[i])
	}
	if len(fmt) == 0 {
		return "", false
	}
	out := make([]byte, 512)
	n := C.nbpf_printk_format((*C.char)(unsafe.Pointer(&out[0])), C.uint32_t(len(out)),
		(*C.char)(unsafe.Pointer(&fmt[0])), C.uint32_t(len(fmt)), &a[0])
	if n < 0 {
		return "", false
	}
	if int(n) >= len(out) {
		n = C.int(len(out) - 1)
	}
	return string(out[:n]), true
}

// ThisSlot returns the calling OS thread's per-CPU slot (what
// bpf_get_smp_processor_id returns on it). Goroutines move between
// threads: lock the goroutine to its thread to make this meaningful.
func ThisSlot() uint32 { return uint32(C.nbpf_this_slot()) }
