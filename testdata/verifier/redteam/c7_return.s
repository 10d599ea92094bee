# Red team, class 7: the return value's width. Hooks return a C int: the
# verifier checks the low 32 bits of r0, read as signed, and every host
# (the shim, nccl.Apply, ncclbpf run) reads exactly those (hook.Range.Result).
# High bits therefore cannot change the outcome: programs that set them
# with a valid low half are accepted (ok_return_high_bits_*), and a value
# whose low half is out of range is refused at the exit (E027).
# Maps: see c1_ptrdiff.s.

-- ok_return_high_bits_low_half_zero
# low half 0, high half 1: 2^32 for the host
lddw %r0, 0x100000000
exit

-- ok_return_high_bits_tuner_apply
# hook: tuner
lddw %r0, 0xffffffff00000000
exit

-- ok_return_high_bits_chunk_default
# hook: tuner/chunk_size
lddw %r0, 0x100000001
exit

-- ok_return_high_bits_profiler_zero
# hook: profiler/p2p_end
lddw %r0, 0x8000000000000000
exit

-- bad_return_64bit_field_checked_on_32
# a 64-bit context field checked with a 32-bit comparison only
ldxdw %r0, [%r1+8]
jgt32 %r0, 255, big
exit # ERROR E027
big:
mov %r0, 0
exit

-- bad_return_signed_low_half
# w0 s>= -1 and s<= 1 on 32 bits; the high half is unknown
# hook: vtest_restricted
ldxdw %r0, [%r1+8]
jsgt32 %r0, 1, zero
jslt32 %r0, -1, zero
exit # ERROR E027
zero:
mov %r0, 0
exit

-- ok_return_high_bits_from_subprogram
# the subprogram builds 2^32 + 1; main returns it unchanged
call local f
exit
f:
lddw %r0, 0x100000001
exit

-- bad_return_negative_64_for_unsigned_range
# -1 as 64 bits: the low half reads 0xffffffff, not in 0..255 either way
mov %r0, -1
exit # ERROR E027

-- ok_return_high_bits_shifted
# 1 << 32
mov %r0, 1
lsh %r0, 32
exit

-- ok_return_alu32_result
# w0 = ... zero-extends: the high half is 0
ldxw %r0, [%r1+0]
and32 %r0, 1
exit

-- ok_return_minus_one_restricted
# hook: vtest_restricted
mov %r0, -1
exit

-- ok_return_tuner_default
# hook: tuner
mov32 %r0, 1
exit
