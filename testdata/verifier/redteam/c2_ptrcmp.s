# Red team, class 2: ordering comparisons between pointers, and pointer
# offsets large enough for the address to wrap. The machine compares
# addresses as unsigned 64-bit numbers; a verifier that orders pointers by
# signed offsets, with offsets unbounded, decides branches the machine does
# not take. ncclbpf lets a pointer move anywhere (accesses check the
# offset), but orders pointers, or compares one with 0, only while every
# offset it may have lies inside its object or just past its end, where
# addresses neither wrap nor reach 0: these are refused at the comparison
# (E024).
# Maps: see c1_ptrdiff.s.

-- bad_dead_branch_after_wrap
# v + 2^63 is "below" v by signed offsets, above it as an address: the
# branch the verifier believes dead stores through a number
stw [%r10-4], 0
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, out
lddw %r2, 0x8000000000000000
mov %r6, %r0
add %r6, %r2
jgt %r6, %r0, dead # ERROR E024
out:
mov %r0, 0
exit
dead:
mov %r6, %r0
add %r6, 4096
stdw [%r6+0], 0
ja out

-- bad_loop_ends_only_if_signed
# p starts 16 bytes below offset 2^63; one step makes its offset -2^63,
# so "p > v" fails for the verifier after one iteration while the machine
# (unsigned) goes round 2^59 times: getCollInfo never returns
# hook: tuner
stw [%r10-4], 0
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, out
lddw %r2, 0x7ffffffffffffff0
mov %r6, %r0
add %r6, %r2
loop:
add %r6, 16
jgt %r6, %r0, loop # ERROR E024
out:
mov %r0, 0
exit

-- bad_binary_search_address
# Reconstructs the address v of a map value bit by bit: "v - c > v" is
# false for the verifier for every c > 0 (a negative offset), but true on
# the machine when c > v (the address wraps). The verifier believes r7
# ends as 2^48-1, a constant; on the machine r7 = v. Then v - r7 + 2^48-1
# is "v + 0" for the verifier and address 2^48-1 on the machine.
stw [%r10-4], 0
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, out
mov %r7, 0
lddw %r8, 0x800000000000
loop:
mov %r3, %r7
or %r3, %r8
mov %r6, %r0
sub %r6, %r3
jgt %r6, %r0, skip # ERROR E024
mov %r7, %r3
skip:
rsh %r8, 1
jne %r8, 0, loop
mov %r6, %r0
sub %r6, %r7
lddw %r3, 0xffffffffffff
add %r6, %r3
ldxdw %r0, [%r6+0]
and %r0, 1
exit
out:
mov %r0, 0
exit

-- bad_unbounded_offset_compare
# p = v + x with x any 64-bit number. "p > v" gives x in [1, 2^63) by
# signed offsets, but the machine also takes it for x = -2^63 (address
# v + 2^63). d = p - v is then believed positive, so "d s< 48" is believed
# to bound it to [1, 47]; on the machine d = -2^63 passes and v + d is wild.
mov %r9, %r1
stw [%r10-4], 0
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, out
ldxdw %r3, [%r9+8]
mov %r6, %r0
add %r6, %r3
jle %r6, %r0, out # ERROR E024
mov %r7, %r6
sub %r7, %r0
jsge %r7, 48, out
mov %r6, %r0
add %r6, %r7
ldxb %r0, [%r6+0]
and %r0, 1
exit
out:
mov %r0, 0
exit

-- bad_ctx_wrap_compare
# the context pointer moved by 2^63 and compared with itself
mov %r6, %r1
lddw %r2, 0x8000000000000000
add %r6, %r2
jlt %r6, %r1, fine # ERROR E024
mov %r3, 1
stdw [%r3+0], 0
fine:
mov %r0, 0
exit

-- bad_stack_wrap_compare
# a stack pointer moved by 2^63: "p < fp" by offsets, not as addresses;
# the branch believed dead stores through p
mov %r6, %r10
lddw %r2, 0x8000000000000000
add %r6, %r2
jlt %r6, %r10, fine # ERROR E024
stdw [%r6+0], 0
mov %r0, 0
exit
fine:
mov %r0, 0
exit

-- bad_record_wrap_compare
# a ringbuf record moved by -2^63 and compared with itself: "p >= r" is
# false by signed offsets, true for the addresses; the branch believed
# dead stores through p
lddw %r1, map(2)
mov %r2, 16
mov %r3, 0
call 131
jeq %r0, 0, out
mov %r6, %r0
lddw %r2, 0x8000000000000000
sub %r6, %r2
jge %r6, %r0, wild # ERROR E024
done:
mov %r1, %r0
mov %r2, 0
call 132
out:
mov %r0, 0
exit
wild:
stdw [%r6+0], 0
ja done

-- bad_signed_compare_of_addresses
# jsgt on two pointers into one value: with p's offset at 2^63-256, the
# offsets say p > v, but the address v + 2^63 - 256 is negative as a
# signed number, so the machine falls through to the "dead" load
stw [%r10-4], 0
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, out
lddw %r2, 0x7fffffffffffff00
mov %r6, %r0
add %r6, %r2
jsgt %r6, %r0, out # ERROR E024
mov %r1, 0
ldxdw %r0, [%r1+0]
exit
out:
mov %r0, 0
exit

-- bad_pointer_vs_scalar_order
# ordering a pointer against a number would reveal the address
mov %r0, 0
ldxdw %r2, [%r1+8]
jlt %r1, %r2, +1 # ERROR E024
exit
exit

-- bad_pointer_vs_address_constant
# comparing with a large constant reveals the address bit by bit
mov %r0, 0
mov %r2, %r10
jgt %r2, 0x10000000, +1 # ERROR E024
exit
mov %r0, 1
exit

-- bad_ctx_vs_stack_order
# pointers into different regions
mov %r0, 0
jgt %r1, %r10, +1 # ERROR E024
exit
mov %r0, 1
exit

-- bad_values_of_two_lookups_order
# two lookups of one map: their order is their address order
mov %r9, %r1
stw [%r10-4], 0
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, out
mov %r6, %r0
stw [%r10-4], 1
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, out
jgt %r6, %r0, out # ERROR E024
mov %r0, 1
exit
out:
mov %r0, 0
exit

-- bad_joined_values_order
# after a join the two lookups' pointers share an empty identity
mov %r9, %r1
stw [%r10-4], 0
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, out
mov %r6, %r0
stw [%r10-4], 1
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, out
mov %r7, %r0
ldxw %r1, [%r9+0]
jeq %r1, 0, join
mov %r1, 0
join:
jgt %r6, %r7, out # ERROR E024
mov %r0, 1
exit
out:
mov %r0, 0
exit

-- bad_pointer_jset
# testing bits of a pointer
mov %r0, 0
mov %r2, %r10
add %r2, -8
jset %r2, 0x1000, +1 # ERROR E024
exit
mov %r0, 1
exit

-- bad_pointer_jmp32_same_region
# a 32-bit comparison of two pointers into one region compares the low
# halves of the addresses
mov %r0, 0
mov %r2, %r10
add %r2, -8
jlt32 %r2, %r10, +1 # ERROR E024
exit
mov %r0, 1
exit

-- ok_walk_to_end_unsigned
# p < end over one value, with bounded offsets: the order of offsets is
# the order of the addresses
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

-- ok_stack_walk_down
# walk the stack from fp-8 down to fp-32, comparing with fp-32
stdw [%r10-32], 1
stdw [%r10-24], 2
stdw [%r10-16], 3
stdw [%r10-8], 4
mov %r1, %r10
add %r1, -8
mov %r2, %r10
add %r2, -32
mov %r0, 0
loop:
ldxdw %r3, [%r1+0]
add %r0, %r3
add %r1, -8
jge %r1, %r2, loop
and %r0, 255
exit
