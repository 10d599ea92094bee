# Red team, class 6: the arguments bpf_printk (bpf_trace_printk, helper 6)
# actually reads. The helper formats as many values as its format asks
# for; a register the program never set holds whatever the host left in
# it (an address, a key). Where the format consumes an argument that is
# not initialized, or the format is not known, uninitialized argument
# registers are refused at the call (E010).
# Maps: see c1_ptrdiff.s.

-- bad_printk_three_formats_one_value
# "%d %d %d\n" with one value: r4 and r5 are printed
lddw %r1, 0x6425206425206425
stxdw [%r10-16], %r1
stdw [%r10-8], 0xa
mov %r1, %r10
add %r1, -16
mov %r2, 10
mov %r3, 7
call 6 # ERROR E010
mov %r0, 0
exit

-- bad_printk_format_no_value
# "%d\n" and no value at all
stdw [%r10-8], 0xa6425
mov %r1, %r10
add %r1, -8
mov %r2, 4
call 6 # ERROR E010
mov %r0, 0
exit

-- bad_printk_value_on_one_path
# r3 is set on one path only
mov %r9, %r1
stdw [%r10-8], 0xa6425
ldxw %r4, [%r9+0]
jeq %r4, 0, print
mov %r3, 1
print:
mov %r1, %r10
add %r1, -8
mov %r2, 4
call 6 # ERROR E010
mov %r0, 0
exit

-- bad_printk_value_clobbered_by_call
# r3 held a value, but the earlier helper call clobbered it
mov %r3, 5
call 5
lddw %r1, 0xa786c6c25
stxdw [%r10-8], %r1
mov %r1, %r10
add %r1, -8
mov %r2, 6
call 6 # ERROR E010
mov %r0, 0
exit

-- bad_printk_format_from_map_value
# the format is a map value, unknown to the verifier: any argument
# register may be consumed
stw [%r10-4], 0
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, out
stb [%r0+47], 0
mov %r1, %r0
mov %r2, 48
call 6 # ERROR E010
out:
mov %r0, 0
exit

-- bad_printk_callee_argument_not_passed
# the subprogram prints its third argument, which the caller never set
mov %r1, 1
mov %r2, 2
call local show
mov %r0, 0
exit
show:
lddw %r4, 0x0a64253d78
stxdw [%r10-8], %r4
mov %r1, %r10
add %r1, -8
mov %r2, 6
call 6 # ERROR E010
mov %r0, 0
exit

-- bad_printk_second_value_missing
# "%d %u\n": r3 set, r4 not
lddw %r1, 0xa7525206425
stxdw [%r10-8], %r1
mov %r1, %r10
add %r1, -8
mov %r2, 7
mov %r3, 1
call 6 # ERROR E010
mov %r0, 0
exit

-- bad_printk_pointer_value
# a pointer as a value
stdw [%r10-8], 0xa6425
mov %r1, %r10
add %r1, -8
mov %r2, 4
mov %r3, %r10
call 6 # ERROR E020
mov %r0, 0
exit

-- bad_printk_size_past_format
# the size covers uninitialized stack
stdw [%r10-8], 0xa6425
mov %r1, %r10
add %r1, -8
mov %r2, 16
mov %r3, 1
call 6 # ERROR E013
mov %r0, 0
exit

-- bad_printk_size_unbounded
mov %r9, %r1
stdw [%r10-8], 0xa6425
mov %r1, %r10
add %r1, -8
ldxw %r2, [%r9+4]
mov %r3, 1
call 6 # ERROR E020
mov %r0, 0
exit

-- ok_printk_exact_values
# "%d\n" with its one value; r4 and r5 are not read
stdw [%r10-8], 0xa6425
mov %r1, %r10
add %r1, -8
mov %r2, 4
mov %r3, 42
call 6
mov %r0, 0
exit

-- ok_printk_three_values
lddw %r1, 0x6425206425206425
stxdw [%r10-16], %r1
stdw [%r10-8], 0xa
mov %r1, %r10
add %r1, -16
mov %r2, 10
mov %r3, 1
mov %r4, 2
mov %r5, 3
call 6
mov %r0, 0
exit
