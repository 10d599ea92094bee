# Red team: BPF-to-BPF calls. A callee sees its arguments r1-r5 (only as
# many as the caller set), its own stack, and pointers the caller passed;
# r1-r5 are clobbered for the caller after the call; a callee's stack
# ends with it.
# Maps: see c1_ptrdiff.s.

-- bad_callee_reads_callers_r6
# r6 of the caller is not an argument
mov %r6, 1
call local f
exit
f:
mov %r0, %r6 # ERROR E010
exit

-- bad_callee_returns_nullable
# the caller dereferences the callee's unchecked lookup
call local f
ldxdw %r0, [%r0+0] # ERROR E012
and %r0, 1
exit
f:
stw [%r10-4], 0
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
exit

-- bad_callee_writes_above_callers_slot
# fp-8 of the caller, written 8 bytes past
mov %r1, %r10
add %r1, -8
call local f
mov %r0, 0
exit
f:
stdw [%r1+8], 0 # ERROR E013
mov %r0, 0
exit

-- bad_callee_reads_callers_uninit_slot
mov %r1, %r10
add %r1, -8
call local f
and %r0, 1
exit
f:
ldxdw %r0, [%r1+0] # ERROR E011
exit

-- bad_recursion
mov %r1, 3
call local f
mov %r0, 0
exit
f:
jeq %r1, 0, done
sub %r1, 1
call local f # ERROR E008
done:
mov %r0, 0
exit

-- bad_stack_budget_over_chain
# 3 frames of 256 bytes: 768 > a budget of 512 for the chain
# maxstack: 512
stdw [%r10-256], 0
call local f # ERROR E009
mov %r0, 0
exit
f:
stdw [%r10-256], 0
call local g
mov %r0, 0
exit
g:
stdw [%r10-256], 0
mov %r0, 0
exit

-- bad_callee_r0_unset
call local f
and %r0, 1 # ERROR E010
exit
f:
mov %r1, 0
exit

-- bad_callee_argument_clobbered_by_helper
mov %r1, 1
mov %r2, 2
call local f
and %r0, 1
exit
f:
call 5
mov %r0, %r2 # ERROR E010
exit

-- bad_caller_argument_after_call
mov %r1, %r10
add %r1, -8
stdw [%r10-8], 0
call local f
ldxdw %r0, [%r1+0] # ERROR E010
exit
f:
mov %r0, 0
exit

-- bad_callee_stack_pointer_through_two_frames
# g returns f's stack pointer to f (allowed: f's frame lives), f returns
# it to main (refused: f's frame ends)
call local f
ldxdw %r0, [%r0+0]
exit
f:
stdw [%r10-8], 0
mov %r1, %r10
add %r1, -8
call local g
exit # ERROR E021
g:
mov %r0, %r1
exit

-- bad_callee_stack_pointer_into_map
# the callee stores the address of its own stack in a map value
mov %r9, %r1
stw [%r10-4], 0
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, out
mov %r8, %r0
mov %r1, %r8
call local f
and %r0, 1
exit
out:
mov %r0, 0
exit
f:
mov %r2, %r10
add %r2, -8
stxdw [%r1+0], %r2 # ERROR E021
mov %r0, 0
exit

-- bad_callee_stores_value_pointer_caller_reads_half
# the callee spills a map value pointer into the caller's slot; the
# caller reads 4 bytes of it
mov %r9, %r1
stw [%r10-4], 0
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, out
mov %r8, %r0
mov %r1, %r10
add %r1, -16
mov %r2, %r8
call local f
ldxw %r0, [%r10-16] # ERROR E021
exit
out:
mov %r0, 0
exit
f:
stxdw [%r1+0], %r2
mov %r0, 0
exit

-- bad_callee_moves_ctx_variably
mov %r2, %r1
ldxw %r1, [%r1+0]
call local f
exit
f:
and %r1, 8
add %r2, %r1 # ERROR E023
ldxw %r0, [%r2+0]
exit

-- bad_callee_keeps_callers_bound_after_write
# the caller checks its slot, the callee changes it, the caller uses it
mov %r9, %r1
stw [%r10-4], 0
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, out
mov %r8, %r0
ldxw %r2, [%r9+4]
and %r2, 0x28
stxdw [%r10-16], %r2
mov %r1, %r10
add %r1, -16
call local f
ldxdw %r2, [%r10-16]
add %r8, %r2
ldxdw %r0, [%r8+0] # ERROR E014
and %r0, 1
exit
out:
mov %r0, 0
exit
f:
stdw [%r1+0], 48
mov %r0, 0
exit

-- bad_callee_null_check_does_not_cover_other_lookup
# the callee checks its argument; the caller's other lookup stays nullable
stw [%r10-4], 0
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
mov %r6, %r0
stw [%r10-4], 1
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
mov %r7, %r0
mov %r1, %r6
call local f
ldxdw %r0, [%r7+0] # ERROR E012
and %r0, 1
exit
f:
jeq %r1, 0, z
ldxdw %r0, [%r1+0]
exit
z:
mov %r0, 0
exit

-- ok_callee_fills_callers_buffer
mov %r1, %r10
add %r1, -16
call local f
ldxdw %r0, [%r10-16]
ldxdw %r1, [%r10-8]
add %r0, %r1
and %r0, 255
exit
f:
stdw [%r1+0], 1
stdw [%r1+8], 2
mov %r0, 0
exit

-- ok_callee_returns_checked_value
call local f
jeq %r0, 0, z
ldxdw %r0, [%r0+0]
and %r0, 1
exit
z:
mov %r0, 0
exit
f:
stw [%r10-4], 0
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
exit
