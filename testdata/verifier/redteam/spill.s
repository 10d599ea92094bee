# Red team: spills, fills and partial overwrites of stack slots. A fill
# keeps a spilled value's bounds only while every byte of the slot is the
# one spilled; a spilled pointer may only be read back whole.
# Maps: see c1_ptrdiff.s. Index programs load 8 bytes at arr[0] + r2
# (safe for r2 in [0, 40]).

-- bad_spill_then_high_byte_overwritten
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
stb [%r10-9], 0xff
ldxdw %r2, [%r10-16]
add %r8, %r2
ldxdw %r0, [%r8+0] # ERROR E014
and %r0, 1
exit
out:
mov %r0, 0
exit

-- bad_spill_then_low_byte_overwritten
mov %r9, %r1
stw [%r10-4], 0
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, out
mov %r8, %r0
mov %r2, 8
stxdw [%r10-16], %r2
stb [%r10-16], 0x30
ldxdw %r2, [%r10-16]
add %r8, %r2
ldxdw %r0, [%r8+0] # ERROR E014
and %r0, 1
exit
out:
mov %r0, 0
exit

-- bad_spill_then_half_overwritten_by_32bit_spill
# the low half is replaced by an unbounded 32-bit value
mov %r9, %r1
stw [%r10-4], 0
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, out
mov %r8, %r0
mov %r2, 8
stxdw [%r10-16], %r2
ldxw %r3, [%r9+4]
stxw [%r10-16], %r3
ldxdw %r2, [%r10-16]
add %r8, %r2
ldxdw %r0, [%r8+0] # ERROR E014
and %r0, 1
exit
out:
mov %r0, 0
exit

-- bad_narrow_fill_of_constant_is_little_endian
# 48 is in the high half: the 4-byte fill at fp-12 reads 48
mov %r9, %r1
stw [%r10-4], 0
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, out
mov %r8, %r0
lddw %r2, 0x0000003000000000
stxdw [%r10-16], %r2
ldxw %r2, [%r10-12]
add %r8, %r2
ldxdw %r0, [%r8+0] # ERROR E014
and %r0, 1
exit
out:
mov %r0, 0
exit

-- bad_signed_narrow_fill
# the low byte 0xf8 read sign-extended is -8
mov %r9, %r1
stw [%r10-4], 0
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, out
mov %r8, %r0
mov %r2, 0xf8
stxdw [%r10-16], %r2
ldxsb %r2, [%r10-16]
add %r8, %r2
ldxdw %r0, [%r8+0] # ERROR E014
and %r0, 1
exit
out:
mov %r0, 0
exit

-- bad_atomic_add_on_spilled_bound
# an atomic add changes the spilled value
mov %r9, %r1
stw [%r10-4], 0
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, out
mov %r8, %r0
mov %r2, 8
stxdw [%r10-16], %r2
mov %r3, 100
lock add [%r10-16], %r3
ldxdw %r2, [%r10-16]
add %r8, %r2
ldxdw %r0, [%r8+0] # ERROR E014
and %r0, 1
exit
out:
mov %r0, 0
exit

-- bad_xchg_on_spilled_bound
mov %r9, %r1
stw [%r10-4], 0
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, out
mov %r8, %r0
mov %r2, 8
stxdw [%r10-16], %r2
ldxdw %r3, [%r9+8]
lock xchg [%r10-16], %r3
ldxdw %r2, [%r10-16]
add %r8, %r2
ldxdw %r0, [%r8+0] # ERROR E014
and %r0, 1
exit
out:
mov %r0, 0
exit

-- bad_store_through_alias_of_slot
# a constant-offset alias of the slot overwrites the spilled bound
mov %r9, %r1
stw [%r10-4], 0
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, out
mov %r8, %r0
mov %r2, 8
stxdw [%r10-16], %r2
mov %r4, %r10
add %r4, -16
ldxdw %r3, [%r9+8]
stxdw [%r4+0], %r3
ldxdw %r2, [%r10-16]
add %r8, %r2
ldxdw %r0, [%r8+0] # ERROR E014
and %r0, 1
exit
out:
mov %r0, 0
exit

-- bad_store_through_variable_alias
# the alias is fp-16 or fp-24: either slot may have changed
mov %r9, %r1
stw [%r10-4], 0
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, out
mov %r8, %r0
mov %r2, 8
stxdw [%r10-16], %r2
stxdw [%r10-24], %r2
ldxw %r5, [%r9+0]
and %r5, 8
mov %r4, %r10
add %r4, -24
add %r4, %r5
ldxdw %r3, [%r9+8]
stxdw [%r4+0], %r3
ldxdw %r2, [%r10-16]
add %r8, %r2
ldxdw %r0, [%r8+0] # ERROR E014
and %r0, 1
exit
out:
mov %r0, 0
exit

-- bad_callee_overwrites_caller_slot
# the callee writes an unbounded value through the pointer it is given
mov %r9, %r1
stw [%r10-4], 0
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, out
mov %r8, %r0
mov %r2, 8
stxdw [%r10-16], %r2
mov %r1, %r10
add %r1, -16
mov %r2, %r9
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
ldxdw %r3, [%r2+8]
stxdw [%r1+0], %r3
mov %r0, 0
exit

-- bad_join_pointer_or_scalar_slot
# fp-16 holds a pointer on one path, a number on the other: filled and
# used as a number, it is a pointer added to a pointer on one path
mov %r9, %r1
stw [%r10-4], 0
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, out
mov %r8, %r0
stdw [%r10-16], 8
ldxw %r1, [%r9+0]
jeq %r1, 0, join
stxdw [%r10-16], %r8
join:
ldxdw %r2, [%r10-16]
add %r8, %r2 # ERROR E023
ldxdw %r0, [%r8+0]
and %r0, 1
exit
out:
mov %r0, 0
exit

-- bad_pointer_spill_low_half_overwritten
# half of a spilled pointer overwritten, the other half read
stxdw [%r10-8], %r10
stw [%r10-8], 0
ldxw %r0, [%r10-4] # ERROR E011
exit

-- bad_pointer_spill_read_as_bytes
stxdw [%r10-8], %r1
ldxb %r0, [%r10-3] # ERROR E021
exit

-- bad_pointer_spill_xchg_reads_it
# an atomic exchange returns the spilled pointer as a number
stxdw [%r10-8], %r10
mov %r1, 0
lock xchg [%r10-8], %r1 # ERROR E021
mov %r0, %r1
and %r0, 255
exit

-- bad_pointer_spill_fetch_add
stxdw [%r10-8], %r1
mov %r2, 0
lock fetch add [%r10-8], %r2 # ERROR E021
mov %r0, %r2
and %r0, 255
exit

-- bad_pointer_spill_cmpxchg
# cmpxchg compares r0 with the slot: r0 = 0 and the slot a pointer
stxdw [%r10-8], %r1
mov %r0, 0
mov %r2, 1
lock cmpxchg [%r10-8], %r2 # ERROR E021
and %r0, 255
exit

-- bad_pointer_spill_in_printk_format
# the helper reads the spilled pointer's bytes
stxdw [%r10-16], %r10
stdw [%r10-8], 0
mov %r1, %r10
add %r1, -16
mov %r2, 16
call 6 # ERROR E021
mov %r0, 0
exit

-- bad_spilled_nullable_copy_after_check_of_other
# the spilled copy of a nullable pointer is checked through a copy
# made after another lookup: it is another lookup's id
mov %r9, %r1
stw [%r10-4], 0
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, out
mov %r8, %r0
stw [%r10-4], 1
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
stxdw [%r10-16], %r0
stw [%r10-4], 2
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, out
ldxdw %r1, [%r10-16]
ldxdw %r0, [%r1+0] # ERROR E012
and %r0, 1
exit
out:
mov %r0, 0
exit

-- bad_stdw_imm_sign_extended
# stdw stores its 32-bit immediate sign-extended: -1 is 2^64-1
mov %r9, %r1
stw [%r10-4], 0
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, out
mov %r8, %r0
stdw [%r10-16], -1
ldxdw %r2, [%r10-16]
rsh %r2, 58
add %r8, %r2
ldxdw %r0, [%r8+0] # ERROR E014
and %r0, 1
exit
out:
mov %r0, 0
exit

-- bad_stdw_imm_sign_extended_narrow_fill
mov %r9, %r1
stw [%r10-4], 0
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, out
mov %r8, %r0
stdw [%r10-16], -8
ldxw %r2, [%r10-12]
add %r8, %r2
ldxdw %r0, [%r8+0] # ERROR E014
and %r0, 1
exit
out:
mov %r0, 0
exit

-- bad_stw_then_fill8
mov %r9, %r1
stw [%r10-4], 0
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, out
mov %r8, %r0
stdw [%r10-16], 0
stw [%r10-12], 0x100
ldxdw %r2, [%r10-16]
rsh %r2, 30
add %r8, %r2
ldxdw %r0, [%r8+0] # ERROR E014
and %r0, 1
exit
out:
mov %r0, 0
exit

-- bad_sth_in_middle_of_spilled_const
mov %r9, %r1
stw [%r10-4], 0
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, out
mov %r8, %r0
stdw [%r10-16], 0
sth [%r10-14], 0x40
ldxdw %r2, [%r10-16]
rsh %r2, 16
add %r8, %r2
ldxdw %r0, [%r8+0] # ERROR E014
and %r0, 1
exit
out:
mov %r0, 0
exit

-- bad_map_value_store_imm_sign_extended
# a map word written with stdw -1 and read back is any number anyway
mov %r9, %r1
stw [%r10-4], 0
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, out
mov %r8, %r0
stdw [%r8+0], -1
ldxdw %r2, [%r8+0]
rsh %r2, 58
add %r8, %r2
ldxdw %r0, [%r8+0] # ERROR E014
and %r0, 1
exit
out:
mov %r0, 0
exit

-- ok_spill_fill_bound_kept
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
ldxdw %r2, [%r10-16]
add %r8, %r2
ldxdw %r0, [%r8+0]
and %r0, 1
exit
out:
mov %r0, 0
exit

-- ok_narrow_fill_of_constant
mov %r9, %r1
stw [%r10-4], 0
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, out
mov %r8, %r0
lddw %r2, 0x0000003000000028
stxdw [%r10-16], %r2
ldxw %r2, [%r10-16]
add %r8, %r2
ldxdw %r0, [%r8+0]
and %r0, 1
exit
out:
mov %r0, 0
exit
