# Red team: helper arguments. Keys and values are read by the helper for
# the map's key_size / value_size bytes; memory arguments for the size in
# the next register, for its largest value; helper results are numbers
# with the ranges the helper really returns.
# Maps: see c1_ptrdiff.s. Index programs load 8 bytes at arr[0] + r2
# (safe for r2 in [0, 40]).

-- bad_key_hole_in_middle
# bytes 0-3 and 5-7 of the 8-byte key are written, byte 4 is not
stw [%r10-8], 1
stb [%r10-3], 0
sth [%r10-2], 0
lddw %r1, map(1)
mov %r2, %r10
add %r2, -8
call 1 # ERROR E011
mov %r0, 0
exit

-- bad_key_written_on_one_path
ldxw %r3, [%r1+0]
jeq %r3, 0, go
stdw [%r10-8], 1
go:
lddw %r1, map(1)
mov %r2, %r10
add %r2, -8
call 1 # ERROR E011
mov %r0, 0
exit

-- bad_update_value_too_short
# the hash value is 8 bytes, the stack holds 4 below fp
stdw [%r10-16], 1
stw [%r10-4], 7
lddw %r1, map(1)
mov %r2, %r10
add %r2, -16
mov %r3, %r10
add %r3, -4
mov %r4, 0
call 2 # ERROR E013
mov %r0, 0
exit

-- bad_update_value_from_end_of_map_value
# 8 bytes of value at offset 44 of a 48-byte map value
mov %r9, %r1
stw [%r10-4], 0
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, out
mov %r8, %r0
stdw [%r10-16], 1
lddw %r1, map(1)
mov %r2, %r10
add %r2, -16
mov %r3, %r8
add %r3, 44
mov %r4, 0
call 2 # ERROR E014
and %r0, 1
exit
out:
mov %r0, 0
exit

-- bad_cpu_id_as_index
# bpf_get_smp_processor_id is a 32-bit number, not a small one
mov %r9, %r1
stw [%r10-4], 0
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, out
mov %r8, %r0
call 8
mov %r2, %r0
add %r8, %r2
ldxdw %r0, [%r8+0] # ERROR E014
and %r0, 1
exit
out:
mov %r0, 0
exit

-- bad_ktime_as_index
mov %r9, %r1
stw [%r10-4], 0
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, out
mov %r8, %r0
call 5
mov %r2, %r0
and %r2, 0x38
add %r8, %r2
ldxdw %r0, [%r8+0] # ERROR E014
and %r0, 1
exit
out:
mov %r0, 0
exit

-- bad_update_result_as_index
# bpf_map_update_elem returns 0 or a negative error
mov %r9, %r1
stw [%r10-4], 0
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, out
mov %r8, %r0
stdw [%r10-16], 1
lddw %r1, map(1)
mov %r2, %r10
add %r2, -16
mov %r3, %r10
add %r3, -16
mov %r4, 0
call 2
mov %r2, %r0
neg %r2
add %r8, %r2
ldxdw %r0, [%r8+0] # ERROR E014
and %r0, 1
exit
out:
mov %r0, 0
exit

-- bad_prandom_unmasked
mov %r9, %r1
stw [%r10-4], 0
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, out
mov %r8, %r0
call 7
mov %r2, %r0
rsh %r2, 26
add %r8, %r2
ldxdw %r0, [%r8+0] # ERROR E014
and %r0, 1
exit
out:
mov %r0, 0
exit

-- bad_ringbuf_output_size_unbounded
stdw [%r10-8], 0
ldxdw %r3, [%r1+8]
lddw %r1, map(2)
mov %r2, %r10
add %r2, -8
mov %r4, 0
call 130 # ERROR E020
mov %r0, 0
exit

-- bad_ringbuf_output_past_value
# 49 bytes of a 48-byte value
mov %r9, %r1
stw [%r10-4], 0
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, out
mov %r8, %r0
lddw %r1, map(2)
mov %r2, %r8
mov %r3, 49
mov %r4, 0
call 130 # ERROR E014
and %r0, 1
exit
out:
mov %r0, 0
exit

-- bad_ringbuf_output_size_minus_one
stdw [%r10-8], 0
lddw %r1, map(2)
mov %r2, %r10
add %r2, -8
mov %r3, -1
mov %r4, 0
call 130 # ERROR E020
mov %r0, 0
exit

-- bad_ringbuf_output_variable_size_past_stack
# size in [0, 16] over 8 initialized bytes
ldxw %r3, [%r1+0]
and %r3, 16
stdw [%r10-8], 0
lddw %r1, map(2)
mov %r2, %r10
add %r2, -8
mov %r4, 0
call 130 # ERROR E013
mov %r0, 0
exit

-- bad_ringbuf_output_data_is_number
# size 0 does not make a number a pointer
lddw %r1, map(2)
mov %r2, 4096
mov %r3, 0
mov %r4, 0
call 130 # ERROR E020
mov %r0, 0
exit

-- bad_reserve_variable_size
ldxw %r2, [%r1+0]
and %r2, 64
lddw %r1, map(2)
mov %r3, 0
call 131 # ERROR E020
mov %r0, 0
exit

-- bad_lookup_on_ringbuf
stw [%r10-4], 0
lddw %r1, map(2)
mov %r2, %r10
add %r2, -4
call 1 # ERROR E020
mov %r0, 0
exit

-- bad_reserve_on_array
lddw %r1, map(0)
mov %r2, 8
mov %r3, 0
call 131 # ERROR E020
mov %r0, 0
exit

-- bad_key_is_context
# the helper would read the context's hidden bytes
mov %r2, %r1
add %r2, 24
lddw %r1, map(1)
call 1 # ERROR E020
mov %r0, 0
exit

-- bad_map_arg_is_number
stw [%r10-4], 0
mov %r1, 0
mov %r2, %r10
add %r2, -4
call 1 # ERROR E020
mov %r0, 0
exit

-- bad_flags_is_pointer
stdw [%r10-8], 1
lddw %r1, map(1)
mov %r2, %r10
add %r2, -8
mov %r3, %r10
add %r3, -8
mov %r4, %r10
call 2 # ERROR E020
mov %r0, 0
exit

-- bad_key_in_record_past_end
# a 4-byte record as an 8-byte key
lddw %r1, map(2)
mov %r2, 4
mov %r3, 0
call 131
jeq %r0, 0, out
stw [%r0+0], 0
mov %r6, %r0
lddw %r1, map(1)
mov %r2, %r6
call 1 # ERROR E014
mov %r1, %r6
mov %r2, 0
call 133
out:
mov %r0, 0
exit

-- bad_key_in_submitted_record
lddw %r1, map(2)
mov %r2, 8
mov %r3, 0
call 131
jeq %r0, 0, out
stdw [%r0+0], 0
mov %r6, %r0
mov %r1, %r0
mov %r2, 0
call 132
lddw %r1, map(1)
mov %r2, %r6 # ERROR E035
call 1
out:
mov %r0, 0
exit

-- bad_key_nullable
stw [%r10-4], 0
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
lddw %r1, map(1)
mov %r2, %r0
call 1 # ERROR E012
mov %r0, 0
exit

-- bad_second_arg_uninit
lddw %r1, map(1)
call 1 # ERROR E010
mov %r0, 0
exit

-- bad_helper_not_allowed_in_hook
# hook: vtest_restricted
call 8 # ERROR E019
mov %r0, 0
exit

-- bad_unknown_helper
call 4096 # ERROR E018
mov %r0, 0
exit

-- bad_ringbuf_in_tuner
# hook: tuner
lddw %r1, map(2)
mov %r2, 8
mov %r3, 0
call 131 # ERROR E019
mov %r0, 0
exit

-- bad_delete_key_too_short
stw [%r10-4], 0
lddw %r1, map(1)
mov %r2, %r10
add %r2, -4
call 3 # ERROR E013
mov %r0, 0
exit

-- bad_update_readonly_global_map
# bpf_map_update_elem writes the read-only (.rodata) map (the helper
# refuses it at run time with -EPERM; the verifier says so at load time,
# as for a store)
stw [%r10-4], 0
stdw [%r10-24], 1
stdw [%r10-16], 2
lddw %r1, map(3)
mov %r2, %r10
add %r2, -4
mov %r3, %r10
add %r3, -24
mov %r4, 0
call 2 # ERROR E029
mov %r0, 0
exit

-- bad_delete_readonly_global_map
# the same for bpf_map_delete_elem
stw [%r10-4], 0
lddw %r1, map(3)
mov %r2, %r10
add %r2, -4
call 3 # ERROR E029
mov %r0, 0
exit

-- bad_lookup_readonly_then_store
stw [%r10-4], 0
lddw %r1, map(3)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, out
stdw [%r0+0], 1 # ERROR E029
out:
mov %r0, 0
exit

-- ok_key_from_record
lddw %r1, map(2)
mov %r2, 8
mov %r3, 0
call 131
jeq %r0, 0, out
stdw [%r0+0], 3
mov %r6, %r0
lddw %r1, map(1)
mov %r2, %r6
call 1
mov %r1, %r6
mov %r2, 0
call 132
out:
mov %r0, 0
exit

-- ok_ringbuf_output_variable_size
ldxw %r3, [%r1+0]
and %r3, 15
stdw [%r10-16], 0
stdw [%r10-8], 0
lddw %r1, map(2)
mov %r2, %r10
add %r2, -16
mov %r4, 0
call 130
mov %r0, 0
exit
