# Red team: variable stack offsets. A variable-offset access must stay in
# [fp-512, fp) for every offset, may read only bytes initialized for every
# offset, initializes nothing when it writes, and may not write over a
# spilled pointer (the pointer's remaining bytes would be read as a
# number).
# Maps: see c1_ptrdiff.s.

-- bad_var_read_one_side_uninit
# fp-16 is written, fp-8 is not; the read is at one of them
ldxw %r2, [%r1+0]
and %r2, 8
stdw [%r10-16], 1
mov %r3, %r10
add %r3, -16
add %r3, %r2
ldxdw %r0, [%r3+0] # ERROR E011
and %r0, 1
exit

-- bad_var_write_initializes_nothing
# a write at fp-16 or fp-8 does not initialize fp-8 for sure
ldxw %r2, [%r1+0]
and %r2, 8
mov %r3, %r10
add %r3, -16
add %r3, %r2
stdw [%r3+0], 1
ldxdw %r0, [%r10-8] # ERROR E011
and %r0, 1
exit

-- bad_var_offset_below_frame
ldxw %r2, [%r1+0]
and %r2, 8
mov %r3, %r10
add %r3, -512
sub %r3, %r2
stdw [%r3+0], 1 # ERROR E013
mov %r0, 0
exit

-- bad_var_offset_above_frame
ldxw %r2, [%r1+0]
and %r2, 7
mov %r3, %r10
add %r3, -8
add %r3, %r2
stdw [%r3+0], 1 # ERROR E013
mov %r0, 0
exit

-- bad_var_offset_unbounded
ldxdw %r2, [%r1+8]
mov %r3, %r10
add %r3, %r2
stb [%r3+0], 1 # ERROR E013
mov %r0, 0
exit

-- bad_var_write_over_spilled_pointer
# a one-byte write at fp-16..fp-1 may hit the spilled pointer at fp-8;
# the bytes it leaves must not read as a number (they are uninitialized
# after the write, or the write is refused: E021 there would do too)
ldxw %r2, [%r1+0]
and %r2, 15
stdw [%r10-16], 0
stxdw [%r10-8], %r10
mov %r3, %r10
add %r3, -16
add %r3, %r2
stb [%r3+0], 0
ldxdw %r0, [%r10-8] # ERROR E011
stw [%r10-16], 0
lddw %r1, map(0)
mov %r2, %r10
add %r2, -16
call 1
jeq %r0, 0, out
ldxdw %r1, [%r10-8]
stxdw [%r0+0], %r1
out:
mov %r0, 0
exit

-- bad_var_pointer_spill
# a pointer stored at a variable offset
ldxw %r2, [%r1+0]
and %r2, 8
mov %r3, %r10
add %r3, -16
add %r3, %r2
stxdw [%r3+0], %r10 # ERROR E021
mov %r0, 0
exit

-- bad_var_key_partially_initialized
# the 8-byte hash key starts at fp-16 or fp-12; fp-8..fp-5 are not set
ldxw %r2, [%r1+0]
and %r2, 4
stdw [%r10-16], 1
mov %r3, %r10
add %r3, -16
add %r3, %r2
lddw %r1, map(1)
mov %r2, %r3
call 1 # ERROR E011
mov %r0, 0
exit

-- bad_var_helper_memory_past_frame
# 8 bytes of format at fp-8 + [0, 7]
ldxw %r2, [%r1+0]
and %r2, 7
stdw [%r10-8], 0xa
mov %r1, %r10
add %r1, -8
add %r1, %r2
mov %r2, 8
call 6 # ERROR E013
mov %r0, 0
exit

-- bad_var_offset_into_caller_frame_past_end
# the callee moves the caller's fp-16 by [0, 15] and writes 8 bytes
ldxw %r2, [%r1+0]
stdw [%r10-16], 0
stdw [%r10-8], 0
mov %r1, %r10
add %r1, -16
call local f
mov %r0, 0
exit
f:
and %r2, 15
add %r1, %r2
stdw [%r1+0], 1 # ERROR E013
mov %r0, 0
exit

-- bad_var_read_spilled_pointer
# a variable read may cover a spilled pointer
ldxw %r2, [%r1+0]
and %r2, 8
stdw [%r10-16], 0
stxdw [%r10-8], %r10
mov %r3, %r10
add %r3, -16
add %r3, %r2
ldxdw %r0, [%r3+0] # ERROR E021
and %r0, 1
exit

-- ok_var_read_all_initialized
ldxw %r2, [%r1+0]
and %r2, 8
stdw [%r10-16], 1
stdw [%r10-8], 2
mov %r3, %r10
add %r3, -16
add %r3, %r2
ldxdw %r0, [%r3+0]
and %r0, 1
exit

-- ok_var_write_then_const_write
ldxw %r2, [%r1+0]
and %r2, 8
mov %r3, %r10
add %r3, -16
add %r3, %r2
stdw [%r3+0], 1
stdw [%r10-8], 3
ldxdw %r0, [%r10-8]
and %r0, 1
exit
