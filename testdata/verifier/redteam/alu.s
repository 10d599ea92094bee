# Red team: ALU bound tracking (tnum, shifts, multiplication, division,
# byte swaps). eBPF masks shift amounts (64-bit: & 63, 32-bit: & 31),
# division by zero gives 0 and modulo by zero keeps the dividend; signed
# division of INT_MIN by -1 gives INT_MIN. Each program computes an index
# r2 into the 48-byte value of arr[0] (r8), safe only in [0, 40]; the
# unsafe ones are refused at the load (E014).
# Maps: see c1_ptrdiff.s.

-- bad_lsh_by_64_is_by_0
# r3 = 64: the machine shifts by 64 & 63 = 0, so r2 stays 48
mov %r9, %r1
stw [%r10-4], 0
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, out
mov %r8, %r0
mov %r2, 48
mov %r3, 64
lsh %r2, %r3
add %r8, %r2
ldxdw %r0, [%r8+0] # ERROR E014
and %r0, 1
exit
out:
mov %r0, 0
exit

-- bad_rsh_by_variable_up_to_127
# r3 in [0, 127]: a shift by 64..127 is a shift by 0..63
mov %r9, %r1
stw [%r10-4], 0
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, out
mov %r8, %r0
ldxdw %r2, [%r9+8]
ldxw %r3, [%r9+4]
and %r3, 127
jlt %r3, 64, out
rsh %r2, %r3
add %r8, %r2
ldxdw %r0, [%r8+0] # ERROR E014
and %r0, 1
exit
out:
mov %r0, 0
exit

-- bad_rsh32_by_32_is_by_0
mov %r9, %r1
stw [%r10-4], 0
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, out
mov %r8, %r0
mov %r2, 0x7fffff00
mov %r3, 32
rsh32 %r2, %r3
add %r8, %r2
ldxdw %r0, [%r8+0] # ERROR E014
and %r0, 1
exit
out:
mov %r0, 0
exit

-- bad_arsh_by_65
mov %r9, %r1
stw [%r10-4], 0
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, out
mov %r8, %r0
lddw %r2, 0x4000000000000000
mov %r3, 65
arsh %r2, %r3
add %r8, %r2
ldxdw %r0, [%r8+0] # ERROR E014
and %r0, 1
exit
out:
mov %r0, 0
exit

-- bad_mul_overflow
# r2 in [0, 2^33] times 2^31 overflows 64 bits
mov %r9, %r1
stw [%r10-4], 0
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, out
mov %r8, %r0
ldxdw %r2, [%r9+8]
lddw %r3, 0x200000000
jgt %r2, %r3, out
lddw %r3, 0x80000000
mul %r2, %r3
add %r8, %r2
ldxdw %r0, [%r8+0] # ERROR E014
and %r0, 1
exit
out:
mov %r0, 0
exit

-- bad_mod_by_zero_keeps_dividend
# r3 may be 0: r2 % 0 is r2, unbounded
mov %r9, %r1
stw [%r10-4], 0
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, out
mov %r8, %r0
ldxdw %r2, [%r9+8]
ldxw %r3, [%r9+4]
and %r3, 7
mod %r2, %r3
add %r8, %r2
ldxdw %r0, [%r8+0] # ERROR E014
and %r0, 1
exit
out:
mov %r0, 0
exit

-- bad_mod32_by_zero_keeps_dividend
mov %r9, %r1
stw [%r10-4], 0
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, out
mov %r8, %r0
ldxw %r2, [%r9+4]
ldxw %r3, [%r9+0]
and32 %r3, 7
mod32 %r2, %r3
add %r8, %r2
ldxdw %r0, [%r8+0] # ERROR E014
and %r0, 1
exit
out:
mov %r0, 0
exit

-- bad_sdiv_min_by_minus_one
# INT64_MIN s/ -1 is INT64_MIN (not 2^63): still negative
mov %r9, %r1
stw [%r10-4], 0
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, out
mov %r8, %r0
ldxdw %r2, [%r9+8]
lddw %r3, 0x8000000000000000
or %r2, %r3
mov %r3, -1
sdiv %r2, %r3
jsgt %r2, 40, out
add %r8, %r2
ldxdw %r0, [%r8+0] # ERROR E014
and %r0, 1
exit
out:
mov %r0, 0
exit

-- bad_smod_negative_remainder
# the sign of a signed remainder is the dividend's: [-7, 7]
mov %r9, %r1
stw [%r10-4], 0
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, out
mov %r8, %r0
ldxdw %r2, [%r9+8]
smod %r2, 8
lsh %r2, 2
add %r8, %r2
ldxdw %r0, [%r8+0] # ERROR E014
and %r0, 1
exit
out:
mov %r0, 0
exit

-- bad_be16_of_byte
# a small value swapped to big endian 16: 0x20 becomes 0x2000
mov %r9, %r1
stw [%r10-4], 0
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, out
mov %r8, %r0
ldxh %r2, [%r9+64]
and %r2, 0x20
be16 %r2
add %r8, %r2
ldxdw %r0, [%r8+0] # ERROR E014
and %r0, 1
exit
out:
mov %r0, 0
exit

-- bad_or_sets_high_bits
# (r2 & 0x28) | 0x40
mov %r9, %r1
stw [%r10-4], 0
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, out
mov %r8, %r0
ldxdw %r2, [%r9+8]
and %r2, 0x28
or %r2, 0x40
add %r8, %r2
ldxdw %r0, [%r8+0] # ERROR E014
and %r0, 1
exit
out:
mov %r0, 0
exit

-- bad_xor_negative
# r2 in [0, 40] xor -1 is [-41, -1]
mov %r9, %r1
stw [%r10-4], 0
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, out
mov %r8, %r0
ldxw %r2, [%r9+4]
jgt %r2, 40, out
xor %r2, -1
add %r8, %r2
ldxdw %r0, [%r8+0] # ERROR E014
and %r0, 1
exit
out:
mov %r0, 0
exit

-- bad_sub_underflow
# 8 - r2 for r2 in [0, 40] is [-32, 8]
mov %r9, %r1
stw [%r10-4], 0
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, out
mov %r8, %r0
ldxw %r2, [%r9+4]
jgt %r2, 40, out
mov %r3, 8
sub %r3, %r2
mov %r2, %r3
add %r8, %r2
ldxdw %r0, [%r8+0] # ERROR E014
and %r0, 1
exit
out:
mov %r0, 0
exit

-- bad_add_unsigned_wrap
# r2 + 2^64-8 for r2 in [0, 40]: [2^64-8, 2^64-1] or [0, 32]
mov %r9, %r1
stw [%r10-4], 0
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, out
mov %r8, %r0
ldxw %r2, [%r9+4]
jgt %r2, 40, out
add %r2, -8
add %r8, %r2
ldxdw %r0, [%r8+0] # ERROR E014
and %r0, 1
exit
out:
mov %r0, 0
exit

-- bad_tnum_and_then_add_carry
# r2 & 0x18 is 0, 8, 16 or 24; + 24 reaches 48
mov %r9, %r1
stw [%r10-4], 0
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, out
mov %r8, %r0
ldxdw %r2, [%r9+8]
and %r2, 0x18
add %r2, 24
add %r8, %r2
ldxdw %r0, [%r8+0] # ERROR E014
and %r0, 1
exit
out:
mov %r0, 0
exit

-- bad_div_by_variable_zero_is_zero_but_mul_after
# r2 / r3 with r3 in [0, 1]: r2 itself when r3 = 1
mov %r9, %r1
stw [%r10-4], 0
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, out
mov %r8, %r0
ldxdw %r2, [%r9+8]
ldxw %r3, [%r9+4]
and %r3, 1
div %r2, %r3
add %r8, %r2
ldxdw %r0, [%r8+0] # ERROR E014
and %r0, 1
exit
out:
mov %r0, 0
exit

-- bad_neg_of_int_min
# r2 s< 0 made positive by neg: INT64_MIN stays negative
mov %r9, %r1
stw [%r10-4], 0
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, out
mov %r8, %r0
ldxdw %r2, [%r9+8]
jsge %r2, 0, out
neg %r2
jsgt %r2, 40, out
add %r8, %r2
ldxdw %r0, [%r8+0] # ERROR E014
and %r0, 1
exit
out:
mov %r0, 0
exit

-- ok_shift_then_mask
mov %r9, %r1
stw [%r10-4], 0
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, out
mov %r8, %r0
ldxdw %r2, [%r9+8]
rsh %r2, 60
and %r2, 0x28
add %r8, %r2
ldxdw %r0, [%r8+0]
and %r0, 1
exit
out:
mov %r0, 0
exit

-- ok_mod_by_nonzero
mov %r9, %r1
stw [%r10-4], 0
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, out
mov %r8, %r0
ldxdw %r2, [%r9+8]
mod %r2, 5
lsh %r2, 3
add %r8, %r2
ldxdw %r0, [%r8+0]
and %r0, 1
exit
out:
mov %r0, 0
exit
