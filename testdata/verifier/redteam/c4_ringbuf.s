# Red team, class 4: ring-buffer references across joins and after
# release. A record pointer merged from two records must stay tied to
# both: submitting (or discarding) them ends it too. Using a record after
# it was submitted or discarded is E035 (use-after-release); handing it
# back to submit or discard a second time is also a use (E035).
# Maps: see c1_ptrdiff.s (map 2 is the ring buffer).

-- bad_join_two_records_submit_both_write
# r6 is record 1 on one path and record 2 on the other; after both are
# submitted, r6 still counts as a live record and is written
mov %r9, %r1
lddw %r1, map(2)
mov %r2, 16
mov %r3, 0
call 131
jeq %r0, 0, out
mov %r7, %r0
lddw %r1, map(2)
mov %r2, 16
mov %r3, 0
call 131
jne %r0, 0, both
mov %r1, %r7
mov %r2, 0
call 133
ja out
both:
mov %r8, %r0
mov %r6, %r7
ldxw %r1, [%r9+0]
jeq %r1, 0, join
mov %r6, %r8
join:
mov %r1, %r7
mov %r2, 0
call 132
mov %r1, %r8
mov %r2, 0
call 132
stdw [%r6+0], 0x41414141 # ERROR E035
out:
mov %r0, 0
exit

-- bad_join_two_records_discard_both_read
# the same with discard, then a read of the discarded memory
mov %r9, %r1
lddw %r1, map(2)
mov %r2, 16
mov %r3, 0
call 131
jeq %r0, 0, out
mov %r7, %r0
lddw %r1, map(2)
mov %r2, 16
mov %r3, 0
call 131
jne %r0, 0, both
mov %r1, %r7
mov %r2, 0
call 133
ja out
both:
mov %r8, %r0
mov %r6, %r8
ldxw %r1, [%r9+4]
jgt %r1, 2, join
mov %r6, %r7
join:
mov %r1, %r8
mov %r2, 0
call 133
mov %r1, %r7
mov %r2, 0
call 133
ldxdw %r0, [%r6+8] # ERROR E035
and %r0, 1
exit
out:
mov %r0, 0
exit

-- bad_join_two_records_spilled
# the merged record pointer waits on the stack
mov %r9, %r1
lddw %r1, map(2)
mov %r2, 16
mov %r3, 0
call 131
jeq %r0, 0, out
mov %r7, %r0
lddw %r1, map(2)
mov %r2, 16
mov %r3, 0
call 131
jne %r0, 0, both
mov %r1, %r7
mov %r2, 0
call 133
ja out
both:
mov %r8, %r0
stxdw [%r10-8], %r7
ldxw %r1, [%r9+0]
jeq %r1, 0, join
stxdw [%r10-8], %r8
join:
mov %r1, %r7
mov %r2, 0
call 132
mov %r1, %r8
mov %r2, 0
call 132
ldxdw %r6, [%r10-8]
stw [%r6+4], 7 # ERROR E035
out:
mov %r0, 0
exit

-- bad_join_two_records_submit_merged_again
# both records submitted, then the merged pointer is submitted too: a
# second commit of one record
mov %r9, %r1
lddw %r1, map(2)
mov %r2, 16
mov %r3, 0
call 131
jeq %r0, 0, out
mov %r7, %r0
lddw %r1, map(2)
mov %r2, 16
mov %r3, 0
call 131
jne %r0, 0, both
mov %r1, %r7
mov %r2, 0
call 133
ja out
both:
mov %r8, %r0
mov %r6, %r7
ldxw %r1, [%r9+0]
jeq %r1, 0, join
mov %r6, %r8
join:
mov %r1, %r7
mov %r2, 0
call 132
mov %r1, %r8
mov %r2, 0
call 132
mov %r1, %r6 # ERROR E035
mov %r2, 0
call 132
out:
mov %r0, 0
exit

-- bad_join_record_then_pass_to_callee
# the merged record is written by a subprogram after both submits
mov %r9, %r1
lddw %r1, map(2)
mov %r2, 16
mov %r3, 0
call 131
jeq %r0, 0, out
mov %r7, %r0
lddw %r1, map(2)
mov %r2, 16
mov %r3, 0
call 131
jne %r0, 0, both
mov %r1, %r7
mov %r2, 0
call 133
ja out
both:
mov %r8, %r0
mov %r6, %r7
ldxw %r1, [%r9+0]
jeq %r1, 0, join
mov %r6, %r8
join:
mov %r1, %r7
mov %r2, 0
call 132
mov %r1, %r8
mov %r2, 0
call 132
mov %r1, %r6 # ERROR E035
call local fill
out:
mov %r0, 0
exit
fill:
stdw [%r1+8], -1
mov %r0, 0
exit

-- bad_join_nullable_records_checked_after
# the records are chosen before their null checks: the merged, still
# nullable pointer is checked on its own, the two records are submitted,
# and the merged one is written
mov %r9, %r1
lddw %r1, map(2)
mov %r2, 16
mov %r3, 0
call 131
mov %r7, %r0
lddw %r1, map(2)
mov %r2, 16
mov %r3, 0
call 131
mov %r8, %r0
mov %r6, %r7
ldxw %r1, [%r9+0]
jeq %r1, 0, join
mov %r6, %r8
join:
jeq %r7, 0, no7
jeq %r8, 0, no8
jeq %r6, 0, both
mov %r1, %r7
mov %r2, 0
call 132
mov %r1, %r8
mov %r2, 0
call 132
stdw [%r6+0], 1 # ERROR E035
mov %r0, 0
exit
both:
mov %r1, %r7
mov %r2, 0
call 133
mov %r1, %r8
mov %r2, 0
call 133
mov %r0, 0
exit
no8:
mov %r1, %r7
mov %r2, 0
call 133
mov %r0, 0
exit
no7:
jeq %r8, 0, none
mov %r1, %r8
mov %r2, 0
call 133
none:
mov %r0, 0
exit

-- bad_write_after_submit
# no join: the record is written after it was committed
lddw %r1, map(2)
mov %r2, 16
mov %r3, 0
call 131
jeq %r0, 0, out
mov %r6, %r0
mov %r1, %r0
mov %r2, 0
call 132
stdw [%r6+0], 1 # ERROR E035
out:
mov %r0, 0
exit

-- bad_read_after_discard
lddw %r1, map(2)
mov %r2, 16
mov %r3, 0
call 131
jeq %r0, 0, out
mov %r6, %r0
mov %r1, %r0
mov %r2, 0
call 133
ldxw %r0, [%r6+0] # ERROR E035
and %r0, 1
exit
out:
mov %r0, 0
exit

-- bad_double_submit
lddw %r1, map(2)
mov %r2, 16
mov %r3, 0
call 131
jeq %r0, 0, out
mov %r6, %r0
mov %r1, %r0
mov %r2, 0
call 132
mov %r1, %r6 # ERROR E035
mov %r2, 0
call 132
out:
mov %r0, 0
exit

-- bad_discard_after_submit_spilled_copy
# the copy on the stack is as dead as the register
lddw %r1, map(2)
mov %r2, 16
mov %r3, 0
call 131
jeq %r0, 0, out
stxdw [%r10-8], %r0
mov %r1, %r0
mov %r2, 0
call 132
ldxdw %r1, [%r10-8]
mov %r2, 0
call 133 # ERROR E035
out:
mov %r0, 0
exit

-- bad_submit_in_callee_write_in_caller
# the callee commits the record; the caller writes it afterwards
lddw %r1, map(2)
mov %r2, 16
mov %r3, 0
call 131
jeq %r0, 0, out
mov %r6, %r0
mov %r1, %r0
call local commit
stdw [%r6+0], 2 # ERROR E035
out:
mov %r0, 0
exit
commit:
mov %r2, 0
call 132
mov %r0, 0
exit

-- bad_use_after_submit_in_loop
# the second iteration writes the record the first one submitted
lddw %r1, map(2)
mov %r2, 16
mov %r3, 0
call 131
jeq %r0, 0, out
mov %r6, %r0
mov %r7, 0
loop:
stxdw [%r6+0], %r7 # ERROR E035
jne %r7, 0, out
mov %r1, %r6
mov %r2, 0
call 132
add %r7, 1
ja loop
out:
mov %r0, 0
exit

-- bad_leak_one_of_two_after_join
# the merged pointer is submitted: one of the two records is never
# released on each path
mov %r9, %r1
lddw %r1, map(2)
mov %r2, 16
mov %r3, 0
call 131
jeq %r0, 0, out
mov %r7, %r0
lddw %r1, map(2)
mov %r2, 16
mov %r3, 0
call 131
jne %r0, 0, both
mov %r1, %r7
mov %r2, 0
call 133
ja out
both:
mov %r8, %r0
mov %r6, %r7
ldxw %r1, [%r9+0]
jeq %r1, 0, join
mov %r6, %r8
join:
mov %r1, %r6
mov %r2, 0
call 132
mov %r0, 0
exit # ERROR E030
out:
mov %r0, 0
exit

-- bad_leak_reserved_in_loop
# three reservations, one release
mov %r6, 0
mov %r7, 0
loop:
lddw %r1, map(2)
mov %r2, 8
mov %r3, 0
call 131
jeq %r0, 0, next
mov %r7, %r0
next:
add %r6, 1
jlt %r6, 3, loop
jeq %r7, 0, out
mov %r1, %r7
mov %r2, 0
call 132
out:
mov %r0, 0
exit # ERROR E030

-- bad_submit_moved_record
lddw %r1, map(2)
mov %r2, 16
mov %r3, 0
call 131
jeq %r0, 0, out
mov %r1, %r0
add %r1, 8
mov %r2, 0
call 132 # ERROR E020
out:
mov %r0, 0
exit

-- bad_record_var_offset_past_end
mov %r9, %r1
lddw %r1, map(2)
mov %r2, 16
mov %r3, 0
call 131
jeq %r0, 0, out
ldxw %r1, [%r9+4]
and %r1, 15
mov %r2, %r0
add %r2, %r1
stw [%r2+0], 0 # ERROR E014
mov %r1, %r0
mov %r2, 0
call 132
out:
mov %r0, 0
exit

-- bad_record_address_into_map
# a record pointer stored into a map value
stw [%r10-4], 0
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, out
mov %r6, %r0
lddw %r1, map(2)
mov %r2, 16
mov %r3, 0
call 131
jeq %r0, 0, out
stxdw [%r6+0], %r0 # ERROR E021
mov %r1, %r0
mov %r2, 0
call 133
out:
mov %r0, 0
exit

-- bad_submit_record_maybe_null_after_join
# null on one path, a record on the other: joined, it may be null
mov %r9, %r1
lddw %r1, map(2)
mov %r2, 16
mov %r3, 0
call 131
mov %r6, %r0
ldxw %r1, [%r9+0]
jeq %r1, 0, join
jeq %r6, 0, out
join:
mov %r1, %r6
mov %r2, 0
call 132 # ERROR E012
out:
mov %r0, 0
exit

-- ok_two_records_joined_each_submitted_once
# the merged pointer is written before either record is submitted
mov %r9, %r1
lddw %r1, map(2)
mov %r2, 16
mov %r3, 0
call 131
jeq %r0, 0, out
mov %r7, %r0
lddw %r1, map(2)
mov %r2, 16
mov %r3, 0
call 131
jne %r0, 0, both
mov %r1, %r7
mov %r2, 0
call 133
ja out
both:
mov %r8, %r0
stdw [%r7+0], 0
stdw [%r8+0], 0
mov %r6, %r7
ldxw %r1, [%r9+0]
jeq %r1, 0, join
mov %r6, %r8
join:
stdw [%r6+8], 5
mov %r1, %r7
mov %r2, 0
call 132
mov %r1, %r8
mov %r2, 0
call 132
out:
mov %r0, 0
exit

-- ok_record_chosen_at_run_time
# one record on each path, submitted after the join
mov %r9, %r1
ldxw %r1, [%r9+0]
jeq %r1, 0, small
lddw %r1, map(2)
mov %r2, 16
mov %r3, 0
call 131
ja join
small:
lddw %r1, map(2)
mov %r2, 16
mov %r3, 0
call 131
join:
jeq %r0, 0, out
stdw [%r0+8], 1
mov %r1, %r0
mov %r2, 0
call 132
out:
mov %r0, 0
exit
