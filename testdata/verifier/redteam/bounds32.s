# Red team: 32-bit bounds (the jmp32/alu32 bugs of the Linux verifier's
# history). Each program computes an index r2 into the 48-byte value of
# arr[0] (r8) and loads 8 bytes there: safe only for r2 in [0, 40]. The
# unsafe ones derive a 64-bit bound from a 32-bit fact that does not
# imply it, and are refused at the load (E014).
# Maps: see c1_ptrdiff.s.

-- bad_jlt32_does_not_bound_64
# w2 < 8 says nothing about the high half of r2
mov %r9, %r1
stw [%r10-4], 0
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, out
mov %r8, %r0
ldxdw %r2, [%r9+8]
jge32 %r2, 8, out
add %r8, %r2
ldxdw %r0, [%r8+0] # ERROR E014
and %r0, 1
exit
out:
mov %r0, 0
exit

-- bad_jgt32_on_64bit_value
mov %r9, %r1
stw [%r10-4], 0
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, out
mov %r8, %r0
ldxdw %r2, [%r9+8]
jgt32 %r2, 40, out
add %r8, %r2
ldxdw %r0, [%r8+0] # ERROR E014
and %r0, 1
exit
out:
mov %r0, 0
exit

-- bad_jsgt32_and_jslt32_on_64bit_value
mov %r9, %r1
stw [%r10-4], 0
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, out
mov %r8, %r0
ldxdw %r2, [%r9+8]
jslt32 %r2, 0, out
jsgt32 %r2, 40, out
add %r8, %r2
ldxdw %r0, [%r8+0] # ERROR E014
and %r0, 1
exit
out:
mov %r0, 0
exit

-- bad_jne32_const_high_half_unknown
# w2 == 8, r2 may be 0x100000008
mov %r9, %r1
stw [%r10-4], 0
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, out
mov %r8, %r0
ldxdw %r2, [%r9+8]
jne32 %r2, 8, out
add %r8, %r2
ldxdw %r0, [%r8+0] # ERROR E014
and %r0, 1
exit
out:
mov %r0, 0
exit

-- bad_cve_2020_8835_shape
# r2 in [1, 2^32+1] and w2 <= 1: r2 is 1, 2^32 or 2^32+1, not only 1
mov %r9, %r1
stw [%r10-4], 0
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, out
mov %r8, %r0
ldxdw %r2, [%r9+8]
jlt %r2, 1, out
lddw %r3, 0x100000001
jgt %r2, %r3, out
jgt32 %r2, 1, out
sub %r2, 1
add %r8, %r2
ldxdw %r0, [%r8+0] # ERROR E014
and %r0, 1
exit
out:
mov %r0, 0
exit

-- bad_sub32_wraps_to_high
# w2 in [0, 40], w2 - 41 wraps to [2^32-41, 2^32-1], zero-extended
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
sub32 %r2, 41
add %r8, %r2
ldxdw %r0, [%r8+0] # ERROR E014
and %r0, 1
exit
out:
mov %r0, 0
exit

-- bad_neg32_of_bounded
# -w2 for w2 in [1, 40] is [2^32-40, 2^32-1] as a 64-bit value
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
jlt %r2, 1, out
neg32 %r2
add %r8, %r2
ldxdw %r0, [%r8+0] # ERROR E014
and %r0, 1
exit
out:
mov %r0, 0
exit

-- bad_add32_overflow
# w2 in [0, 40] + 0xfffffff0 wraps for w2 >= 16 only: [0, 24] or near 2^32
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
add32 %r2, 0xfffffff0
add %r8, %r2
ldxdw %r0, [%r8+0] # ERROR E014
and %r0, 1
exit
out:
mov %r0, 0
exit

-- bad_jset32_low_bits_only
# no bit above 2 set in w2, the high half still unknown
mov %r9, %r1
stw [%r10-4], 0
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, out
mov %r8, %r0
ldxdw %r2, [%r9+8]
jset32 %r2, 0xfffffff8, out
add %r8, %r2
ldxdw %r0, [%r8+0] # ERROR E014
and %r0, 1
exit
out:
mov %r0, 0
exit

-- bad_arsh32_sign_fill
# w2 s>> 31 is 0 or 0xffffffff, zero-extended: 0 or 4294967295
mov %r9, %r1
stw [%r10-4], 0
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, out
mov %r8, %r0
ldxw %r2, [%r9+4]
arsh32 %r2, 31
add %r8, %r2
ldxdw %r0, [%r8+0] # ERROR E014
and %r0, 1
exit
out:
mov %r0, 0
exit

-- bad_mov32_keeps_no_bound_of_64
# the 64-bit check is on r3; the copy's low half is what is used
mov %r9, %r1
stw [%r10-4], 0
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, out
mov %r8, %r0
ldxdw %r3, [%r9+8]
mov32 %r2, %r3
jsgt %r3, 40, out
add %r8, %r2
ldxdw %r0, [%r8+0] # ERROR E014
and %r0, 1
exit
out:
mov %r0, 0
exit

-- bad_jlt32_register_unknown_high
# w2 < w3 with w3 a 32-bit value under 41, r2 64-bit
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
jgt %r3, 40, out
jge32 %r2, %r3, out
add %r8, %r2
ldxdw %r0, [%r8+0] # ERROR E014
and %r0, 1
exit
out:
mov %r0, 0
exit

-- bad_jmp32_imm_is_not_sign_extended
# the immediate 0xffffffff of a jmp32 is 4294967295: w2 < it is most
# values
mov %r9, %r1
stw [%r10-4], 0
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, out
mov %r8, %r0
ldxw %r2, [%r9+4]
jge32 %r2, 0xffffffff, out
add %r8, %r2
ldxdw %r0, [%r8+0] # ERROR E014
and %r0, 1
exit
out:
mov %r0, 0
exit

-- bad_lsh32_then_rsh64
# (w2 << 28) as 32 bits then >> 25 on 64: the high bits of w2 are lost,
# the result is in [0, 120]
mov %r9, %r1
stw [%r10-4], 0
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, out
mov %r8, %r0
ldxw %r2, [%r9+4]
lsh32 %r2, 28
rsh %r2, 25
add %r8, %r2
ldxdw %r0, [%r8+0] # ERROR E014
and %r0, 1
exit
out:
mov %r0, 0
exit

-- bad_mul32_wraps
# w2 * 0x10000001 for w2 in [0, 40]: 32-bit wrap, low half of w2 << 28 + w2
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
mul32 %r2, 0x10000001
add %r8, %r2
ldxdw %r0, [%r8+0] # ERROR E014
and %r0, 1
exit
out:
mov %r0, 0
exit

-- bad_signed64_upper_to_w32
# r2 s<= 5 leaves r2 = 0xffffffff00000003 and r2 = -1: the low half is
# not bounded by 5
mov %r9, %r1
stw [%r10-4], 0
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, out
mov %r8, %r0
ldxdw %r3, [%r9+8]
jsgt %r3, 5, out
mov32 %r2, %r3
add %r8, %r2
ldxdw %r0, [%r8+0] # ERROR E014
and %r0, 1
exit
out:
mov %r0, 0
exit

-- bad_mov32_imm_is_zero_extended
# w2 = -1 is 0xffffffff, not -1: + 1 is 2^32, not 0
mov %r9, %r1
stw [%r10-4], 0
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, out
mov %r8, %r0
mov32 %r2, -1
add %r2, 1
add %r8, %r2
ldxdw %r0, [%r8+0] # ERROR E014
and %r0, 1
exit
out:
mov %r0, 0
exit

-- bad_or32_raises_bound
# w2 in [0, 40] | 8 reaches 47
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
or32 %r2, 8
add %r8, %r2
ldxdw %r0, [%r8+0] # ERROR E014
and %r0, 1
exit
out:
mov %r0, 0
exit

-- bad_xor32_of_bounded
# w2 in [0, 40] ^ 0x20 reaches 0x28 ^ 0x20 | 0x1f = 0x3f
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
xor32 %r2, 0x20
add %r8, %r2
ldxdw %r0, [%r8+0] # ERROR E014
and %r0, 1
exit
out:
mov %r0, 0
exit

-- bad_and32_keeps_high_unknown_when_64
# and32 zero-extends: this is the safe direction; the 64-bit and of a
# sign-extended mask keeps the high half
mov %r9, %r1
stw [%r10-4], 0
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, out
mov %r8, %r0
ldxdw %r2, [%r9+8]
and %r2, -8
rsh %r2, 58
add %r8, %r2
ldxdw %r0, [%r8+0] # ERROR E014
and %r0, 1
exit
out:
mov %r0, 0
exit

-- ok_jlt32_on_u32
# a 32-bit load has a zero high half: w2 <= 40 bounds r2
mov %r9, %r1
stw [%r10-4], 0
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, out
mov %r8, %r0
ldxw %r2, [%r9+4]
jgt32 %r2, 40, out
add %r8, %r2
ldxdw %r0, [%r8+0]
and %r0, 1
exit
out:
mov %r0, 0
exit

-- ok_alu32_and_index
mov %r9, %r1
stw [%r10-4], 0
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, out
mov %r8, %r0
ldxdw %r2, [%r9+8]
and32 %r2, 0x28
add %r8, %r2
ldxdw %r0, [%r8+0]
and %r0, 1
exit
out:
mov %r0, 0
exit
