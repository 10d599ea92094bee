# Red team: signed and unsigned views of one number. A signed check does
# not bound the unsigned value and the other way round; sign extension,
# negation and arithmetic shifts move values across zero.
# Maps: see c1_ptrdiff.s. Index programs load 8 bytes at arr[0] + r2
# (safe for r2 in [0, 40]).

-- bad_signed_upper_only
# r2 s<= 40 leaves every negative number
mov %r9, %r1
stw [%r10-4], 0
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, out
mov %r8, %r0
ldxdw %r2, [%r9+8]
jsgt %r2, 40, out
add %r8, %r2
ldxdw %r0, [%r8+0] # ERROR E014
and %r0, 1
exit
out:
mov %r0, 0
exit

-- bad_signed_lower_only
mov %r9, %r1
stw [%r10-4], 0
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, out
mov %r8, %r0
ldxdw %r2, [%r9+8]
jslt %r2, 0, out
add %r8, %r2
ldxdw %r0, [%r8+0] # ERROR E014
and %r0, 1
exit
out:
mov %r0, 0
exit

-- bad_unsigned_lower_signed_upper
# r2 >= 8 (unsigned) and r2 s<= 40: negative numbers pass both
mov %r9, %r1
stw [%r10-4], 0
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, out
mov %r8, %r0
ldxdw %r2, [%r9+8]
jlt %r2, 8, out
jsgt %r2, 40, out
add %r8, %r2
ldxdw %r0, [%r8+0] # ERROR E014
and %r0, 1
exit
out:
mov %r0, 0
exit

-- bad_sign_extending_load
# a sign-extended byte is in [-128, 127]
mov %r9, %r1
stw [%r10-4], 0
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, out
mov %r8, %r0
ldxsh %r2, [%r9+64]
and %r2, -8
jsgt %r2, 40, out
add %r8, %r2
ldxdw %r0, [%r8+0] # ERROR E014
and %r0, 1
exit
out:
mov %r0, 0
exit

-- bad_movsx8_of_byte
# a u8 up to 200 is [-128, 127] sign-extended
mov %r9, %r1
stw [%r10-4], 0
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, out
mov %r8, %r0
ldxh %r2, [%r9+64]
and %r2, 0xff
movsx864 %r2, %r2
jsgt %r2, 40, out
add %r8, %r2
ldxdw %r0, [%r8+0] # ERROR E014
and %r0, 1
exit
out:
mov %r0, 0
exit

-- bad_sext32_after_signed_32_upper_only
# w2 s<= 40 then sign extension: [-2^31, 40]
mov %r9, %r1
stw [%r10-4], 0
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, out
mov %r8, %r0
ldxw %r2, [%r9+4]
jsgt32 %r2, 40, out
lsh %r2, 32
arsh %r2, 32
add %r8, %r2
ldxdw %r0, [%r8+0] # ERROR E014
and %r0, 1
exit
out:
mov %r0, 0
exit

-- bad_arsh_keeps_sign
# r2 in [-16, 16] s>> 1 is [-8, 8]
mov %r9, %r1
stw [%r10-4], 0
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, out
mov %r8, %r0
ldxdw %r2, [%r9+8]
jsgt %r2, 16, out
jslt %r2, -16, out
arsh %r2, 1
add %r8, %r2
ldxdw %r0, [%r8+0] # ERROR E014
and %r0, 1
exit
out:
mov %r0, 0
exit

-- bad_neg_bounded
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
neg %r2
add %r8, %r2
ldxdw %r0, [%r8+0] # ERROR E014
and %r0, 1
exit
out:
mov %r0, 0
exit

-- bad_abs_of_int_min
# |r2| by "if r2 < 0, r2 = -r2": INT64_MIN stays INT64_MIN
mov %r9, %r1
stw [%r10-4], 0
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, out
mov %r8, %r0
ldxdw %r2, [%r9+8]
jsge %r2, 0, pos
neg %r2
pos:
jsgt %r2, 40, out
add %r8, %r2
ldxdw %r0, [%r8+0] # ERROR E014
and %r0, 1
exit
out:
mov %r0, 0
exit

-- bad_signed_compare_of_two_unknowns
# r2 s< r3 with r3 s<= 40: r2 unbounded below
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
jsge %r2, %r3, out
add %r8, %r2
ldxdw %r0, [%r8+0] # ERROR E014
and %r0, 1
exit
out:
mov %r0, 0
exit

-- bad_unsigned_compare_with_negative_imm
# r2 < -8 as unsigned is r2 < 2^64-8
mov %r9, %r1
stw [%r10-4], 0
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, out
mov %r8, %r0
ldxdw %r2, [%r9+8]
jge %r2, -8, out
add %r8, %r2
ldxdw %r0, [%r8+0] # ERROR E014
and %r0, 1
exit
out:
mov %r0, 0
exit

-- bad_sdiv_by_negative
# r2 in [0, 40] s/ -1 is [-40, 0]
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
sdiv %r2, -1
add %r8, %r2
ldxdw %r0, [%r8+0] # ERROR E014
and %r0, 1
exit
out:
mov %r0, 0
exit

-- ok_signed_both_sides
mov %r9, %r1
stw [%r10-4], 0
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, out
mov %r8, %r0
ldxdw %r2, [%r9+8]
jslt %r2, 0, out
jsgt %r2, 40, out
add %r8, %r2
ldxdw %r0, [%r8+0]
and %r0, 1
exit
out:
mov %r0, 0
exit

-- ok_sext32_both_sides
# the precision case: 32-bit signed checks on both sides, then sign
# extension as clang emits it
mov %r9, %r1
stw [%r10-4], 0
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, out
mov %r8, %r0
ldxw %r2, [%r9+4]
jslt32 %r2, 0, out
jsgt32 %r2, 40, out
lsh %r2, 32
arsh %r2, 32
add %r8, %r2
ldxdw %r0, [%r8+0]
and %r0, 1
exit
out:
mov %r0, 0
exit
