# Red team, class 1: pointer - pointer after joins. After two paths meet,
# map value pointers of different lookups must not become "the same
# region": their difference is an address difference, not an offset.
# Format and maps: see testdata/verifier/asm/structure.s; this corpus adds
# map 4 small (array, value 8, 4 entries) and 5 arr2 (like arr).
# Every bad_ program here is refused where two possibly different objects
# are subtracted (E023).

-- bad_diff_hash_values_after_join
# p and q come from two hash lookups; both paths meet before p - q. The
# difference is believed 0, so p + (p - q) = 2p - q is "p + 0".
mov %r9, %r1
stdw [%r10-8], 1
lddw %r1, map(1)
mov %r2, %r10
add %r2, -8
call 1
jeq %r0, 0, out
mov %r6, %r0
stdw [%r10-8], 2
lddw %r1, map(1)
mov %r2, %r10
add %r2, -8
call 1
jeq %r0, 0, out
mov %r7, %r0
ldxw %r1, [%r9+0]
jeq %r1, 0, join
mov %r1, 1
join:
mov %r8, %r6
sub %r8, %r7 # ERROR E023
add %r6, %r8
stdw [%r6+0], 0
out:
mov %r0, 0
exit

-- bad_diff_swapped_after_join
# the two pointers swap roles on one path; p + (p - q) is wild either way
mov %r9, %r1
stdw [%r10-8], 1
lddw %r1, map(1)
mov %r2, %r10
add %r2, -8
call 1
jeq %r0, 0, out
mov %r6, %r0
stdw [%r10-8], 2
lddw %r1, map(1)
mov %r2, %r10
add %r2, -8
call 1
jeq %r0, 0, out
mov %r7, %r0
ldxw %r1, [%r9+0]
jeq %r1, 0, join
mov %r1, %r6
mov %r6, %r7
mov %r7, %r1
join:
mov %r8, %r6
sub %r8, %r7 # ERROR E023
mov %r0, %r6
add %r0, %r8
ldxdw %r0, [%r0+0]
and %r0, 255
exit
out:
mov %r0, 0
exit

-- bad_diff_array_elements_after_join
# two elements of one array (keys 0 and 15): 720 bytes apart, believed 0
mov %r9, %r1
stw [%r10-4], 0
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, out
mov %r6, %r0
stw [%r10-4], 15
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, out
mov %r7, %r0
ldxw %r1, [%r9+4]
jgt %r1, 3, join
mov %r1, 0
join:
mov %r8, %r7
sub %r8, %r6 # ERROR E023
add %r7, %r8
stdw [%r7+40], -1
out:
mov %r0, 0
exit

-- bad_diff_through_spill_join
# the pointers are spilled before the join and filled after it
mov %r9, %r1
stdw [%r10-8], 1
lddw %r1, map(1)
mov %r2, %r10
add %r2, -8
call 1
jeq %r0, 0, out
stxdw [%r10-16], %r0
stdw [%r10-8], 2
lddw %r1, map(1)
mov %r2, %r10
add %r2, -8
call 1
jeq %r0, 0, out
stxdw [%r10-24], %r0
ldxw %r1, [%r9+0]
jne %r1, 7, join
mov %r0, 0
join:
ldxdw %r6, [%r10-16]
ldxdw %r7, [%r10-24]
sub %r6, %r7 # ERROR E023
ldxdw %r7, [%r10-16]
add %r7, %r6
ldxdw %r0, [%r7+0]
and %r0, 1
exit
out:
mov %r0, 0
exit

-- bad_diff_in_callee_after_join
# the joined pointers are subtracted by a subprogram
mov %r9, %r1
stdw [%r10-8], 1
lddw %r1, map(1)
mov %r2, %r10
add %r2, -8
call 1
jeq %r0, 0, out
mov %r6, %r0
stdw [%r10-8], 2
lddw %r1, map(1)
mov %r2, %r10
add %r2, -8
call 1
jeq %r0, 0, out
mov %r7, %r0
ldxw %r1, [%r9+0]
jeq %r1, 0, join
mov %r1, 0
join:
mov %r1, %r6
mov %r2, %r7
call local diff
add %r6, %r0
ldxdw %r0, [%r6+0]
and %r0, 1
exit
out:
mov %r0, 0
exit
diff:
mov %r0, %r1
sub %r0, %r2 # ERROR E023
exit

-- bad_diff_as_printk_size
# the believed-zero difference widens a helper's memory argument: the
# helper reads fmt_size bytes far past the 8-byte format on the stack
mov %r9, %r1
stdw [%r10-8], 1
lddw %r1, map(1)
mov %r2, %r10
add %r2, -8
call 1
jeq %r0, 0, out
mov %r6, %r0
stdw [%r10-8], 2
lddw %r1, map(1)
mov %r2, %r10
add %r2, -8
call 1
jeq %r0, 0, out
mov %r7, %r0
ldxw %r1, [%r9+0]
jeq %r1, 0, join
mov %r1, 0
join:
sub %r6, %r7 # ERROR E023
stdw [%r10-16], 0x0a6b6f
mov %r1, %r10
add %r1, -16
mov %r2, 8
add %r2, %r6
call 6
out:
mov %r0, 0
exit

-- bad_diff_as_loop_bound
# the difference bounds a loop that writes through p
mov %r9, %r1
stdw [%r10-8], 1
lddw %r1, map(1)
mov %r2, %r10
add %r2, -8
call 1
jeq %r0, 0, out
mov %r6, %r0
stdw [%r10-8], 2
lddw %r1, map(1)
mov %r2, %r10
add %r2, -8
call 1
jeq %r0, 0, out
mov %r7, %r0
ldxw %r1, [%r9+0]
jeq %r1, 0, join
mov %r1, 0
join:
mov %r2, %r7
sub %r2, %r6 # ERROR E023
loop:
jeq %r2, 0, out
stb [%r6+0], 0
add %r6, 1
sub %r2, 1
ja loop
out:
mov %r0, 0
exit

-- bad_diff_null_or_value_join
# one path looked up twice, the other reuses the first value: after the
# join the two registers are "one lookup"
mov %r9, %r1
stdw [%r10-8], 1
lddw %r1, map(1)
mov %r2, %r10
add %r2, -8
call 1
jeq %r0, 0, out
mov %r6, %r0
mov %r7, %r0
ldxw %r1, [%r9+0]
jeq %r1, 0, join
stdw [%r10-8], 2
lddw %r1, map(1)
mov %r2, %r10
add %r2, -8
call 1
jeq %r0, 0, out
mov %r7, %r0
join:
mov %r8, %r6
sub %r8, %r7 # ERROR E023
add %r6, %r8
ldxdw %r0, [%r6+0]
and %r0, 1
exit
out:
mov %r0, 0
exit

-- bad_diff_in_loop_lookups
# each iteration looks a value up; the loop's states are joined at the
# head, and the previous iteration's pointer is subtracted from the new one
mov %r9, %r1
mov %r8, 0
stdw [%r10-8], 1
lddw %r1, map(1)
mov %r2, %r10
add %r2, -8
call 1
jeq %r0, 0, out
mov %r6, %r0
mov %r7, %r0
loop:
stxdw [%r10-8], %r8
lddw %r1, map(1)
mov %r2, %r10
add %r2, -8
call 1
jeq %r0, 0, out
mov %r7, %r6
mov %r6, %r0
add %r8, 1
jlt %r8, 3, loop
sub %r6, %r7 # ERROR E023
add %r7, %r6
add %r7, %r6
stdw [%r7+0], 0
out:
mov %r0, 0
exit

-- bad_diff_nullable_joined_then_checked
# the pointers are joined while still nullable, then checked
mov %r9, %r1
stdw [%r10-8], 1
lddw %r1, map(1)
mov %r2, %r10
add %r2, -8
call 1
mov %r6, %r0
stdw [%r10-8], 2
lddw %r1, map(1)
mov %r2, %r10
add %r2, -8
call 1
mov %r7, %r0
ldxw %r1, [%r9+0]
jeq %r1, 0, join
mov %r1, 0
join:
jeq %r6, 0, out
jeq %r7, 0, out
mov %r8, %r6
sub %r8, %r7 # ERROR E023
add %r6, %r8
ldxdw %r0, [%r6+0]
and %r0, 1
exit
out:
mov %r0, 0
exit

-- ok_diff_same_lookup
# the difference of two pointers into one value is a number
stw [%r10-4], 0
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, out
mov %r1, %r0
add %r1, 40
sub %r1, %r0
add %r0, %r1
ldxdw %r0, [%r0+0]
and %r0, 1
exit
out:
mov %r0, 0
exit

-- ok_diff_stack_pointers
mov %r1, %r10
add %r1, -16
mov %r2, %r10
add %r2, -8
sub %r2, %r1
mov %r0, %r2
exit

-- ok_diff_same_lookup_after_join
# p is v+8 on one path and v+16 on the other, q is v on both: after the
# join both still point into the one looked-up value, so p - q is the
# number 8 or 16
mov %r9, %r1
stw [%r10-4], 0
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, out
mov %r6, %r0
add %r6, 8
mov %r7, %r0
ldxw %r1, [%r9+0]
jeq %r1, 0, join
add %r6, 8
join:
sub %r6, %r7
add %r7, %r6
ldxdw %r0, [%r7+0]
and %r0, 1
exit
out:
mov %r0, 0
exit

-- ok_walk_then_index_by_difference
# a pointer walk stops at the first slot equal to op; the index is the
# distance from the value's start (a loop exit joins the walk's states)
mov %r9, %r1
stw [%r10-4], 0
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, out
ldxw %r4, [%r9+0]
mov %r1, %r0
add %r1, 16
mov %r2, %r0
add %r2, 48
loop:
ldxw %r3, [%r1+0]
jeq %r3, %r4, found
add %r1, 4
jlt %r1, %r2, loop
found:
sub %r1, %r0
mov %r0, %r1
and %r0, 255
exit
out:
mov %r0, 0
exit
