# Types and memory. See structure.s for the format.

-- ok_spill_fill_pointer
stw [%r10-4], 1
lddw %r1, map(0)
stxdw [%r10-16], %r1
ldxdw %r1, [%r10-16]
mov %r2, %r10
add %r2, -4
call 1
stxdw [%r10-24], %r0
ldxdw %r6, [%r10-24]
jeq %r6, 0, out
ldxdw %r0, [%r6+40]
and %r0, 255
exit
out:
mov %r0, 0
exit

-- bad_spill_fill_keeps_null
stw [%r10-4], 1
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
stxdw [%r10-24], %r0
ldxdw %r6, [%r10-24]
ldxdw %r0, [%r6+0] # ERROR E012
exit

-- ok_null_check_through_spill
stw [%r10-4], 1
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
stxdw [%r10-24], %r0
jeq %r0, 0, out
ldxdw %r6, [%r10-24]
ldxdw %r0, [%r6+0]
and %r0, 7
exit
out:
mov %r0, 0
exit

-- bad_partial_pointer_read
stxdw [%r10-8], %r1
ldxw %r0, [%r10-8] # ERROR E021
exit

-- bad_misaligned_pointer_spill
stxdw [%r10-12], %r1 # ERROR E021
mov %r0, 0
exit

-- bad_narrow_pointer_spill
stxw [%r10-8], %r1 # ERROR E021
mov %r0, 0
exit

-- bad_pointer_overwritten_half
stxdw [%r10-8], %r1
stw [%r10-8], 0
ldxdw %r0, [%r10-8] # ERROR E011
exit

-- ok_spilled_scalar_bounds
ldxw %r1, [%r1+0]
and %r1, 7
stxdw [%r10-8], %r1
lddw %r2, map(0)
stw [%r10-12], 0
mov %r6, %r10
add %r6, -12
mov %r1, %r2
mov %r2, %r6
call 1
jeq %r0, 0, out
ldxdw %r1, [%r10-8]
lsh %r1, 2
add %r0, %r1
ldxw %r0, [%r0+16]
and %r0, 1
exit
out:
mov %r0, 0
exit

-- bad_readonly_map
lddw %r1, map_value(3)+0
stw [%r1+0], 1 # ERROR E029
mov %r0, 0
exit

-- ok_readonly_map_read
lddw %r1, map_value(3)+8
ldxdw %r0, [%r1+0]
and %r0, 1
exit

-- bad_global_past_end
lddw %r1, map_value(3)+12
ldxdw %r0, [%r1+0] # ERROR E014
exit

-- bad_jmp32_pointer
mov %r0, 0
jeq32 %r1, 0, +1 # ERROR E024
exit
exit

-- bad_pointer_jset
mov %r0, 0
jset %r10, 8, +1 # ERROR E024
exit
exit

-- bad_add_pointers
mov %r2, %r10
add %r2, %r1 # ERROR E023
mov %r0, 0
exit

-- bad_alu32_pointer
mov %r2, %r10
add32 %r2, -8 # ERROR E023
mov %r0, 0
exit

-- bad_mov32_pointer
mov32 %r2, %r1 # ERROR E023
mov %r0, 0
exit

-- bad_neg_pointer
neg %r1 # ERROR E023
mov %r0, 0
exit

-- bad_return_pointer_from_subprogram_stack
call local f
mov %r0, 0
exit
f:
mov %r0, %r10
add %r0, -8
exit # ERROR E021

-- bad_callee_stack_into_caller
mov %r1, %r10
add %r1, -8
call local f
mov %r0, 0
exit
f:
mov %r2, %r10
add %r2, -16
stxdw [%r1+0], %r2 # ERROR E021
mov %r0, 0
exit

-- ok_pass_stack_pointer
stdw [%r10-8], 5
mov %r1, %r10
add %r1, -8
call local f
and %r0, 255
exit
f:
ldxdw %r0, [%r1+0]
stdw [%r1+0], 6
exit

-- bad_atomic_on_ctx
mov %r2, 1
lock add32 [%r1+16], %r2 # ERROR E016
mov %r0, 0
exit

-- bad_atomic_pointer_operand
stdw [%r10-8], 0
mov %r2, %r10
lock add [%r10-8], %r2 # ERROR E021
mov %r0, 0
exit

-- bad_atomic_uninit_stack
mov %r2, 1
lock add [%r10-8], %r2 # ERROR E011
mov %r0, 0
exit

-- ok_atomics
stw [%r10-4], 0
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, out
mov %r1, 1
lock add [%r0+0], %r1
lock fetch add [%r0+8], %r1
mov %r6, %r0
mov %r0, 0
lock cmpxchg [%r6+8], %r1
lock xchg32 [%r6+16], %r1
and %r0, 1
exit
out:
mov %r0, 0
exit

-- bad_atomic_oob
stw [%r10-4], 0
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, out
mov %r1, 1
lock add [%r0+48], %r1 # ERROR E014
out:
mov %r0, 0
exit

-- bad_deref_map_handle
lddw %r1, map(1)
ldxdw %r0, [%r1+0] # ERROR E028
exit

-- bad_store_through_scalar
mov %r1, 4096
stdw [%r1+0], 0 # ERROR E028
mov %r0, 0
exit

-- ok_div_warning
ldxw %r2, [%r1+4]
mov %r0, 100
div %r0, %r2
mod %r0, 7
exit

-- bad_lookup_key_too_short
stw [%r10-4], 1
lddw %r1, map(1)
mov %r2, %r10
add %r2, -4
call 1 # ERROR E013
mov %r0, 0
exit

-- bad_lookup_key_uninit_tail
stw [%r10-8], 1
lddw %r1, map(1)
mov %r2, %r10
add %r2, -8
call 1 # ERROR E011
mov %r0, 0
exit

-- bad_key_in_map_value_past_end
stw [%r10-4], 1
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, out
mov %r2, %r0
add %r2, 44
lddw %r1, map(1)
call 1 # ERROR E014
out:
mov %r0, 0
exit

-- ok_key_in_map_value
stw [%r10-4], 1
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, out
mov %r2, %r0
add %r2, 40
lddw %r1, map(1)
call 1
out:
mov %r0, 0
exit

-- bad_infinite_self_loop
mov %r0, 0
ja -1 # ERROR E025

-- bad_infinite_wait_flag
mov %r0, 0
l:
ldxw %r2, [%r1+68]
jne %r2, 0, l # ERROR E025
exit

-- bad_complexity_counter
mov %r0, 0
mov %r1, 0
l:
add %r1, 1
jne %r1, 0, l # ERROR E026
exit

-- ok_bounded_countdown
mov %r0, 0
mov %r1, 100
l:
add %r0, 1
sub %r1, 1
jne %r1, 0, l
exit

-- ok_pointer_walk_to_end
stw [%r10-4], 0
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, out
mov %r1, %r0
add %r1, 16
mov %r2, %r0
add %r2, 48
mov %r0, 0
loop:
ldxw %r3, [%r1+0]
add %r0, %r3
add %r1, 4
jlt %r1, %r2, loop
and %r0, 255
exit
out:
mov %r0, 0
exit

-- bad_pointer_walk_past_end
stw [%r10-4], 0
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, out
mov %r1, %r0
mov %r2, %r0
add %r2, 48
mov %r0, 0
loop:
ldxw %r3, [%r1+4] # ERROR E014
add %r0, %r3
add %r1, 4
jlt %r1, %r2, loop
and %r0, 255
exit
out:
mov %r0, 0
exit

-- bad_compare_different_lookups
stw [%r10-4], 0
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
mov %r6, %r0
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, out
jeq %r6, 0, out
jlt %r6, %r0, out # ERROR E024
out:
mov %r0, 0
exit

-- ok_stack_pointer_walk
stdw [%r10-32], 1
stdw [%r10-24], 2
stdw [%r10-16], 3
stdw [%r10-8], 4
mov %r1, %r10
add %r1, -32
mov %r0, 0
loop:
ldxdw %r3, [%r1+0]
add %r0, %r3
add %r1, 8
jne %r1, %r10, loop
and %r0, 255
exit
