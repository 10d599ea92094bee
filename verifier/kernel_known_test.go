//go:build linux

package verifier_test

// kernelDifference explains one disagreement between ncclbpf's verifier
// and Linux's on a corpus program (TestKernelVerifierAgrees).
type kernelDifference struct {
	category string // the kind of difference (docs/kernel-second-opinion.md groups them)
	reason   string // why the verifiers disagree, in one line
	// mayAgree marks a difference that depends on the machine or the
	// kernel version: where the verifiers agree on it, the entry is not
	// stale.
	mayAgree bool
}

// Categories of difference, each with the reason that applies to every
// program of the category unless its entry says more. "Privileged" is
// Linux with CAP_BPF and CAP_PERFMON (or CAP_SYS_ADMIN), the rules the
// test loads under: allow_ptr_leaks and allow_uninit_stack are on.
const (
	catPointerCompare = "pointer comparison"
	catPointerLeak    = "address leak"
	catUninitStack    = "uninitialized stack"
	catPointerBytes   = "pointer bytes"
	catPrintk         = "bpf_printk arguments"
	catReleased       = "released record"
	catMapHandle      = "map handle"
	catConstKey       = "constant-key lookup"
	catCPUID          = "CPU id range"
	catPointerRange   = "bounds from pointer comparison"
	catPtrDiff        = "pointer difference"
	catModBounds      = "modulo bounds"
	catByteStore      = "byte stores"
	catCopy32         = "32-bit copies"

	// ncclbpf refuses, Linux accepts
	catPointerCompareWhy = "privileged Linux lets pointers be ordered, masked and compared on 32 bits (allow_ptr_leaks); ncclbpf compares a pointer only with 0 or with one into the same object, inside it"
	catPointerLeakWhy    = "privileged Linux lets an address reach a map, a record, a helper argument, the log or the return value (allow_ptr_leaks); ncclbpf refuses every way out for an address"
	catUninitStackWhy    = "privileged Linux lets programs read uninitialized stack bytes (allow_uninit_stack); ncclbpf requires every byte read, or handed to a helper, to be written on every path"
	catPointerBytesWhy   = "a narrow store over half a spilled pointer: privileged Linux reads the rest as plain bytes; ncclbpf treats the pointer's remaining bytes as unreadable"
	catPrintkWhy         = "Linux does not read bpf_printk's format at load and never checks arguments 3-5; ncclbpf reads the format (from read-only data or constant stack bytes) and requires every argument it consumes to be set"
	catReleasedWhy       = "after a ring-buffer submit Linux turns the spilled record pointer into a number that privileged programs may read; ncclbpf refuses any use of a released record, its spilled bytes included"
	catMapHandleWhy      = "privileged Linux lets a program read struct bpf_map's fields through a map handle (with kernel BTF); ncclbpf's map handles are opaque"
	catConstKeyWhy       = "Linux (6.14 and later) knows that a lookup in an array map with a constant in-range key (here zero bytes on the stack) cannot fail; ncclbpf requires the null check after every lookup"
	catCPUIDWhy          = "Linux bounds bpf_get_smp_processor_id() by the running machine's CPU count (nr_cpu_ids), so the index fits this machine's value; ncclbpf verifies for any host and takes any 32-bit number"

	// Linux refuses, ncclbpf accepts
	catPointerRangeWhy = "Linux learns no offset bounds from comparing two pointers into the same object (only packet pointers); ncclbpf narrows the offsets, so pointer-walking loops verify"
	catPtrDiffWhy      = "Linux gives pointer - pointer an unknown number even inside one map value; ncclbpf knows the difference of two offsets into the same object"
	catModBoundsWhy    = "Linux computes no range for the result of BPF_MOD; ncclbpf knows x % 5 is in [0, 4]"
	catByteStoreWhy    = "a byte stored into a stack slot holding a known number: Linux makes the whole slot plain bytes, unknown when read back; ncclbpf keeps the known bits of every byte"
	catCopy32Why       = "Linux links a 32-bit copy (w3 = w2) to its source only when the source fits in 32 bits; ncclbpf also links the 32-bit copies of a 64-bit number's low half to each other, so bounding one bounds the others"
)

// Categories that only Linux's CAP_BPF-without-CAP_PERFMON rules show
// (kernelDifferencesCapBPF): allow_ptr_leaks, allow_uninit_stack and
// bypass_spec_v1 are off.
const (
	catNarrowSpill  = "narrow constant spill"
	catNoPointerOps = "pointer comparison and difference"
	catSpectre      = "Spectre v1 rules"

	// ncclbpf refuses, Linux accepts
	catNarrowSpillWhy = "observed: after a 4-byte constant store to the low half of an 8-byte slot Linux accepts the whole slot as an initialized map key (its narrow-spill bookkeeping marks the other bytes written); ncclbpf tracks initialization per byte"

	// Linux refuses, ncclbpf accepts
	catNoPointerOpsWhy = "without CAP_PERFMON Linux refuses ordering comparisons of pointers and pointer - pointer altogether; ncclbpf allows them between pointers into the same object, where the result is an offset, not an address"
	catSpectreWhy      = "without CAP_PERFMON Linux guards against Spectre v1: pointer arithmetic must keep the pointer inside its object on every path and variable-offset stack accesses are refused; ncclbpf runs policies inside the process that loaded them, where speculation crosses no privilege boundary"
)

// kernelDifferences are the known disagreements, keyed by "file.s:program"
// and direction (true: ncclbpf refuses what Linux accepts; false: Linux
// refuses what ncclbpf accepts). The test fails when an entry no longer
// disagrees, unless it is marked mayAgree: the CPU id bound holds on
// machines of at most 41 CPUs, the constant-key lookup needs Linux 6.14,
// and Linux 6.18 no longer marks the rest of a slot written after a
// narrow constant spill.
var kernelDifferences = map[kernelDiffKey]kernelDifference{
	{"helperargs.s:bad_cpu_id_as_index", true}:                           {category: catCPUID, reason: catCPUIDWhy, mayAgree: true},
	{"helperargs.s:bad_key_nullable", true}:                              {category: catConstKey, reason: catConstKeyWhy, mayAgree: true},
	{"subprog.s:bad_callee_returns_nullable", true}:                      {category: catConstKey, reason: catConstKeyWhy, mayAgree: true},
	{"memory.s:bad_deref_map_handle", true}:                              {category: catMapHandle, reason: catMapHandleWhy},
	{"alu.s:ok_mod_by_nonzero", false}:                                   {category: catModBounds, reason: catModBoundsWhy},
	{"memory.s:bad_pointer_overwritten_half", true}:                      {category: catPointerBytes, reason: catPointerBytesWhy},
	{"spill.s:bad_pointer_spill_low_half_overwritten", true}:             {category: catPointerBytes, reason: catPointerBytesWhy},
	{"c2_ptrcmp.s:bad_ctx_vs_stack_order", true}:                         {category: catPointerCompare, reason: catPointerCompareWhy},
	{"c2_ptrcmp.s:bad_joined_values_order", true}:                        {category: catPointerCompare, reason: catPointerCompareWhy},
	{"c2_ptrcmp.s:bad_pointer_jmp32_same_region", true}:                  {category: catPointerCompare, reason: catPointerCompareWhy},
	{"c2_ptrcmp.s:bad_pointer_jset", true}:                               {category: catPointerCompare, reason: catPointerCompareWhy},
	{"c2_ptrcmp.s:bad_pointer_vs_address_constant", true}:                {category: catPointerCompare, reason: catPointerCompareWhy},
	{"c2_ptrcmp.s:bad_pointer_vs_scalar_order", true}:                    {category: catPointerCompare, reason: catPointerCompareWhy},
	{"c2_ptrcmp.s:bad_values_of_two_lookups_order", true}:                {category: catPointerCompare, reason: catPointerCompareWhy},
	{"leaks.s:bad_cmpxchg_pointer_as_expected_value", true}:              {category: catPointerCompare, reason: catPointerCompareWhy},
	{"memory.s:bad_compare_different_lookups", true}:                     {category: catPointerCompare, reason: catPointerCompareWhy},
	{"memory.s:bad_jmp32_pointer", true}:                                 {category: catPointerCompare, reason: catPointerCompareWhy},
	{"memory.s:bad_pointer_jset", true}:                                  {category: catPointerCompare, reason: catPointerCompareWhy},
	{"soundness.s:bad_ptr_order_after_join_of_lookups", true}:            {category: catPointerCompare, reason: catPointerCompareWhy},
	{"soundness.s:bad_stack_ptr_order_outside_frame", true}:              {category: catPointerCompare, reason: catPointerCompareWhy},
	{"c4_ringbuf.s:bad_record_address_into_map", true}:                   {category: catPointerLeak, reason: catPointerLeakWhy},
	{"c6_printk.s:bad_printk_pointer_value", true}:                       {category: catPointerLeak, reason: catPointerLeakWhy},
	{"helperargs.s:bad_flags_is_pointer", true}:                          {category: catPointerLeak, reason: catPointerLeakWhy},
	{"leaks.s:bad_atomic_or_pointer_into_record", true}:                  {category: catPointerLeak, reason: catPointerLeakWhy},
	{"leaks.s:bad_cmpxchg_pointer_into_map", true}:                       {category: catPointerLeak, reason: catPointerLeakWhy},
	{"leaks.s:bad_pointer_as_update_key", true}:                          {category: catPointerLeak, reason: catPointerLeakWhy},
	{"leaks.s:bad_pointer_difference_across_frames", true}:               {category: catPointerLeak, reason: "the distance between two frames is layout, not data: privileged Linux allows the subtraction; ncclbpf refuses it across frames"},
	{"leaks.s:bad_pointer_difference_of_stack_and_value", true}:          {category: catPointerLeak, reason: "the distance between the stack and a map value is an address: privileged Linux allows pointer - pointer across regions; ncclbpf refuses it"},
	{"leaks.s:bad_pointer_via_ringbuf_output_stack", true}:               {category: catPointerLeak, reason: catPointerLeakWhy},
	{"leaks.s:bad_printk_value_map_pointer_on_one_path", true}:           {category: catPointerLeak, reason: catPointerLeakWhy},
	{"leaks.s:bad_printk_value_pointer_on_one_path", true}:               {category: catPointerLeak, reason: catPointerLeakWhy},
	{"leaks.s:bad_return_ctx_pointer", true}:                             {category: catPointerLeak, reason: catPointerLeakWhy},
	{"leaks.s:bad_return_map_handle", true}:                              {category: catPointerLeak, reason: catPointerLeakWhy},
	{"memory.s:bad_atomic_pointer_operand", true}:                        {category: catPointerLeak, reason: catPointerLeakWhy},
	{"spill.s:bad_pointer_spill_in_printk_format", true}:                 {category: catPointerLeak, reason: catPointerLeakWhy},
	{"subprog.s:bad_callee_stack_pointer_into_map", true}:                {category: catPointerLeak, reason: catPointerLeakWhy},
	{"varstack.s:bad_var_pointer_spill", true}:                           {category: catPointerLeak, reason: "a pointer spilled at a variable offset: privileged Linux turns the slots it may cover into plain bytes; ncclbpf keeps pointers in whole constant slots only"},
	{"varstack.s:bad_var_read_spilled_pointer", true}:                    {category: catPointerLeak, reason: "a variable-offset read may cover a spilled pointer: privileged Linux reads it as a number; ncclbpf refuses the address as data"},
	{"c1_ptrdiff.s:ok_walk_then_index_by_difference", false}:             {category: catPointerRange, reason: catPointerRangeWhy},
	{"c2_ptrcmp.s:ok_stack_walk_down", false}:                            {category: catPointerRange, reason: catPointerRangeWhy},
	{"c2_ptrcmp.s:ok_walk_to_end_unsigned", false}:                       {category: catPointerRange, reason: catPointerRangeWhy},
	{"memory.s:ok_pointer_walk_to_end", false}:                           {category: catPointerRange, reason: catPointerRangeWhy},
	{"memory.s:ok_stack_pointer_walk", false}:                            {category: catPointerRange, reason: catPointerRangeWhy},
	{"soundness.s:ok_ptr_loop_inside_value", false}:                      {category: catPointerRange, reason: catPointerRangeWhy},
	{"c6_printk.s:bad_printk_callee_argument_not_passed", true}:          {category: catPrintk, reason: catPrintkWhy},
	{"c6_printk.s:bad_printk_format_from_map_value", true}:               {category: catPrintk, reason: catPrintkWhy},
	{"c6_printk.s:bad_printk_format_no_value", true}:                     {category: catPrintk, reason: catPrintkWhy},
	{"c6_printk.s:bad_printk_second_value_missing", true}:                {category: catPrintk, reason: catPrintkWhy},
	{"c6_printk.s:bad_printk_three_formats_one_value", true}:             {category: catPrintk, reason: catPrintkWhy},
	{"c6_printk.s:bad_printk_value_clobbered_by_call", true}:             {category: catPrintk, reason: catPrintkWhy},
	{"c6_printk.s:bad_printk_value_on_one_path", true}:                   {category: catPrintk, reason: catPrintkWhy},
	{"soundness.s:bad_printk_format_constant_on_stack_two_values", true}: {category: catPrintk, reason: catPrintkWhy},
	{"soundness.s:bad_printk_format_in_rodata_uninit_value", true}:       {category: catPrintk, reason: catPrintkWhy},
	{"soundness.s:bad_printk_format_on_stack_uninit_values", true}:       {category: catPrintk, reason: catPrintkWhy},
	{"soundness.s:bad_printk_format_on_stack_bytes_two_values", true}:    {category: catPrintk, reason: catPrintkWhy},
	{"soundness.s:bad_printk_format_on_stack_byte_unknown", true}:        {category: catPrintk, reason: catPrintkWhy},
	{"soundness.s:bad_printk_format_on_stack_byte_overwritten", true}:    {category: catPrintk, reason: catPrintkWhy},
	{"soundness.s:ok_stack_byte_store_keeps_rest", false}:                {category: catByteStore, reason: catByteStoreWhy},
	{"soundness.s:ok_range_check_sub32_second_copy", false}:              {category: catCopy32, reason: catCopy32Why},
	{"c1_ptrdiff.s:ok_diff_same_lookup", false}:                          {category: catPtrDiff, reason: catPtrDiffWhy},
	{"c1_ptrdiff.s:ok_diff_same_lookup_after_join", false}:               {category: catPtrDiff, reason: catPtrDiffWhy},
	{"soundness.s:bad_ringbuf_spilled_pointer_after_submit", true}:       {category: catReleased, reason: catReleasedWhy},
	{"atomics.s:bad_atomic_on_uninit_stack", true}:                       {category: catUninitStack, reason: catUninitStackWhy},
	{"helperargs.s:bad_key_hole_in_middle", true}:                        {category: catUninitStack, reason: catUninitStackWhy},
	{"helperargs.s:bad_key_written_on_one_path", true}:                   {category: catUninitStack, reason: catUninitStackWhy},
	{"memory.s:bad_atomic_uninit_stack", true}:                           {category: catUninitStack, reason: catUninitStackWhy},
	{"memory.s:bad_lookup_key_uninit_tail", true}:                        {category: catUninitStack, reason: catUninitStackWhy},
	{"subprog.s:bad_callee_reads_callers_uninit_slot", true}:             {category: catUninitStack, reason: catUninitStackWhy},
	{"varstack.s:bad_var_key_partially_initialized", true}:               {category: catUninitStack, reason: catUninitStackWhy},
	{"varstack.s:bad_var_read_one_side_uninit", true}:                    {category: catUninitStack, reason: catUninitStackWhy},
	{"varstack.s:bad_var_write_initializes_nothing", true}:               {category: catUninitStack, reason: catUninitStackWhy},
	{"varstack.s:bad_var_write_over_spilled_pointer", true}:              {category: catUninitStack, reason: catUninitStackWhy},
}

// kernelDifferencesCapBPF are the known disagreements with Linux's rules
// for a loader holding CAP_BPF but not CAP_PERFMON (socket filters).
var kernelDifferencesCapBPF = map[kernelDiffKey]kernelDifference{
	{"helperargs.s:bad_cpu_id_as_index", true}:                {category: catCPUID, reason: catCPUIDWhy, mayAgree: true},
	{"helperargs.s:bad_key_nullable", true}:                   {category: catConstKey, reason: catConstKeyWhy, mayAgree: true},
	{"subprog.s:bad_callee_returns_nullable", true}:           {category: catConstKey, reason: catConstKeyWhy, mayAgree: true},
	{"memory.s:bad_lookup_key_uninit_tail", true}:             {category: catNarrowSpill, reason: catNarrowSpillWhy, mayAgree: true},
	{"soundness.s:ok_stack_byte_store_keeps_rest", false}:     {category: catByteStore, reason: catByteStoreWhy},
	{"c1_ptrdiff.s:ok_diff_same_lookup", false}:               {category: catNoPointerOps, reason: catNoPointerOpsWhy},
	{"c1_ptrdiff.s:ok_diff_same_lookup_after_join", false}:    {category: catNoPointerOps, reason: catNoPointerOpsWhy},
	{"c1_ptrdiff.s:ok_diff_stack_pointers", false}:            {category: catNoPointerOps, reason: catNoPointerOpsWhy},
	{"c2_ptrcmp.s:ok_stack_walk_down", false}:                 {category: catNoPointerOps, reason: catNoPointerOpsWhy},
	{"leaks.s:ok_pointer_difference_same_value", false}:       {category: catNoPointerOps, reason: catNoPointerOpsWhy},
	{"memory.s:ok_stack_pointer_walk", false}:                 {category: catNoPointerOps, reason: catNoPointerOpsWhy},
	{"soundness.s:ok_ptr_diff_same_lookup_after_join", false}: {category: catNoPointerOps, reason: catNoPointerOpsWhy},
	{"c1_ptrdiff.s:ok_walk_then_index_by_difference", false}:  {category: catSpectre, reason: catSpectreWhy},
	{"c2_ptrcmp.s:ok_walk_to_end_unsigned", false}:            {category: catSpectre, reason: catSpectreWhy},
	{"memory.s:ok_bounded_countdown", false}:                  {category: catSpectre, reason: "observed: under the Spectre v1 rules Linux also walks the mispredicted side of branches and this 100-iteration loop of exact counters runs past its 1,000,000-instruction budget; privileged Linux accepts it"},
	{"memory.s:ok_pointer_walk_to_end", false}:                {category: catSpectre, reason: catSpectreWhy},
	{"soundness.s:ok_ptr_end_compare_just_past_end", false}:   {category: catSpectre, reason: catSpectreWhy},
	{"soundness.s:ok_ptr_loop_inside_value", false}:           {category: catSpectre, reason: catSpectreWhy},
	{"varstack.s:ok_var_read_all_initialized", false}:         {category: catSpectre, reason: catSpectreWhy},
	{"varstack.s:ok_var_write_then_const_write", false}:       {category: catSpectre, reason: catSpectreWhy},
}
