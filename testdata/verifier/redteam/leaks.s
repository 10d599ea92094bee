# Red team: pointer leaks. No address may leave the program: not into a
# map value, a ringbuf record, a context field, r0 at exit, or a helper
# argument that the helper prints or copies (E021, or E020 where the
# helper's argument must be a number).
# Maps: see c1_ptrdiff.s.

-- bad_printk_value_pointer_on_one_path
# r3 is the stack address on one path and a number on the other: merged,
# it must not count as "not passed"
mov %r9, %r1
stdw [%r10-8], 0xa6425
mov %r3, 5
ldxw %r4, [%r9+0]
jeq %r4, 0, print
mov %r3, %r10
print:
mov %r1, %r10
add %r1, -8
mov %r2, 4
call 6 # ERROR E020
mov %r0, 0
exit

-- bad_printk_value_map_pointer_on_one_path
mov %r9, %r1
stw [%r10-4], 0
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, out
mov %r8, %r0
mov %r3, 5
ldxw %r4, [%r9+0]
jeq %r4, 0, print
mov %r3, %r8
print:
stdw [%r10-16], 0xa6425
mov %r1, %r10
add %r1, -16
mov %r2, 4
call 6 # ERROR E020
and %r0, 1
exit
out:
mov %r0, 0
exit

-- bad_xchg_pointer_into_map
mov %r9, %r1
stw [%r10-4], 0
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, out
mov %r8, %r0
mov %r1, %r10
lock xchg [%r8+0], %r1 # ERROR E021
and %r0, 1
exit
out:
mov %r0, 0
exit

-- bad_cmpxchg_pointer_into_map
# the new value is a pointer
mov %r9, %r1
stw [%r10-4], 0
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, out
mov %r8, %r0
mov %r0, 0
mov %r1, %r10
lock cmpxchg [%r8+8], %r1 # ERROR E021
and %r0, 1
exit
out:
mov %r0, 0
exit

-- bad_cmpxchg_pointer_as_expected_value
# r0, the expected value, is a pointer: equality with memory reveals it
# (a comparison of a pointer with a number: E024)
mov %r9, %r1
stw [%r10-4], 0
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, out
mov %r8, %r0
mov %r0, %r10
mov %r1, 0
lock cmpxchg [%r8+8], %r1 # ERROR E024
and %r0, 1
exit
out:
mov %r0, 0
exit

-- bad_fetch_add_pointer_into_map
mov %r9, %r1
stw [%r10-4], 0
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, out
mov %r8, %r0
mov %r1, %r8
lock fetch add [%r8+16], %r1 # ERROR E021
and %r0, 1
exit
out:
mov %r0, 0
exit

-- bad_atomic_or_pointer_into_record
lddw %r1, map(2)
mov %r2, 8
mov %r3, 0
call 131
jeq %r0, 0, out
stdw [%r0+0], 0
mov %r1, %r10
lock or [%r0+0], %r1 # ERROR E021
mov %r1, %r0
mov %r2, 0
call 132
out:
mov %r0, 0
exit

-- bad_ctx_pointer_into_ctx
mov %r2, %r1
stxw [%r1+16], %r2 # ERROR E021
mov %r0, 0
exit

-- bad_return_ctx_pointer
mov %r0, %r1
exit # ERROR E021

-- bad_return_map_handle
lddw %r0, map(0)
exit # ERROR E021

-- bad_map_handle_into_map_value
mov %r9, %r1
stw [%r10-4], 0
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, out
mov %r8, %r0
lddw %r1, map(1)
stxdw [%r8+0], %r1 # ERROR E021
and %r0, 1
exit
out:
mov %r0, 0
exit

-- bad_map_handle_spill_read_half
lddw %r1, map(1)
stxdw [%r10-8], %r1
ldxw %r0, [%r10-8] # ERROR E021
exit

-- bad_pointer_via_ringbuf_output_stack
# the data copied into the ring holds a spilled pointer
stxdw [%r10-8], %r10
lddw %r1, map(2)
mov %r2, %r10
add %r2, -8
mov %r3, 8
mov %r4, 0
call 130 # ERROR E021
mov %r0, 0
exit

-- bad_pointer_as_update_key
# a key whose bytes are a spilled pointer
stxdw [%r10-8], %r1
lddw %r1, map(1)
mov %r2, %r10
add %r2, -8
call 1 # ERROR E021
mov %r0, 0
exit

-- bad_pointer_difference_of_stack_and_value
# two regions: stack minus map value is an address difference
mov %r9, %r1
stw [%r10-4], 0
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, out
mov %r8, %r0
mov %r2, %r10
sub %r2, %r8 # ERROR E023
mov %r0, %r2
and %r0, 1
exit
out:
mov %r0, 0
exit

-- bad_pointer_difference_across_frames
# the caller's stack minus the callee's: two frames, two regions
mov %r1, %r10
call local f
exit
f:
mov %r0, %r10
sub %r0, %r1 # ERROR E023
and %r0, 255
exit

-- ok_pointer_difference_same_value
mov %r9, %r1
stw [%r10-4], 0
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, out
mov %r8, %r0
mov %r2, %r8
add %r2, 40
sub %r2, %r8
mov %r0, %r2
and %r0, 1
exit
out:
mov %r0, 0
exit
