# Red team: rank uniformity (tuner hook: reg_buff at 32 is [local],
# n_ranks at 36 and coll_type at 24 [uniform], n_channels at 156 is a
# decision).

-- bad_local_branch_decided_after_join
# the first branch on a local value forks; its control ends at the join;
# the second branch on the same value is decided on each path, so without
# a control entry each path writes a constant
# hook: tuner
ldxw %r6, [%r1+32]
mov %r7, 0
jgt %r6, 5, big
mov %r7, 1
big:
jgt %r6, 5, wide
stw [%r1+156], 1 # ERROR E033
mov %r0, 0
exit
wide:
stw [%r1+156], 2
mov %r0, 0
exit

-- bad_local_lookup_null_check_decided_after_join
# whether the lookup of a local key finds an entry is local; the second
# null check is decided on each path (a valid pointer, or the constant 0)
# hook: tuner
ldxw %r6, [%r1+32]
mov %r9, %r1
stxdw [%r10-8], %r6
mov %r2, %r10
add %r2, -8
lddw %r1, map(1)
call 1
mov %r7, 0
jeq %r0, 0, miss
mov %r7, 1
miss:
jeq %r0, 0, none
stw [%r9+156], 1 # ERROR E033
mov %r0, 0
exit
none:
stw [%r9+156], 2
mov %r0, 0
exit

-- bad_local_branch_decided_jmp32_constant
# after a branch on a local value pins it to 7, a 32-bit comparison of
# two constants is decided on each path
# hook: tuner
ldxw %r6, [%r1+32]
jeq %r6, 7, seven
mov %r6, 8
seven:
jeq32 %r6, 7, same
stw [%r1+156], 1 # ERROR E033
mov %r0, 0
exit
same:
stw [%r1+156], 2
mov %r0, 0
exit

-- ok_uniform_branch_decided_after_join
# the same shape on a [uniform] field is fine
# hook: tuner
ldxw %r6, [%r1+36]
mov %r7, 0
jgt %r6, 5, big
mov %r7, 1
big:
jgt %r6, 5, wide
stw [%r1+156], 1
mov %r0, 0
exit
wide:
stw [%r1+156], 2
mov %r0, 0
exit

-- ok_local_branch_decided_then_join
# a decided branch on local data puts the path under control only until
# the two sides of the jump meet again
# hook: tuner
ldxw %r6, [%r1+32]
mov %r7, 0
jgt %r6, 5, big
mov %r7, 1
big:
jgt %r6, 5, wide
mov %r7, 2
wide:
stw [%r1+156], 4
mov %r0, 0
exit

-- bad_decision_from_per_cpu_map
# no program writes pcpu, but each thread reads its own copy of the value
# (the control plane may set the copies apart, and which copy a thread
# gets depends on the order threads arrived): the value is rank-local
# hook: tuner
mov %r9, %r1
stw [%r10-4], 0
mov %r2, %r10
add %r2, -4
lddw %r1, map(6)
call 1
jeq %r0, 0, out
ldxdw %r3, [%r0+0]
and %r3, 15
stxw [%r9+156], %r3 # ERROR E033
out:
mov %r0, 0
exit

-- ok_per_cpu_map_counts_beside_a_uniform_decision
# a tuner may keep per-thread counters; it just does not decide on them
# hook: tuner
mov %r9, %r1
stw [%r10-4], 0
mov %r2, %r10
add %r2, -4
lddw %r1, map(6)
call 1
jeq %r0, 0, out
mov %r1, 1
lock add [%r0+0], %r1
out:
stw [%r9+156], 4
mov %r0, 0
exit

-- bad_local_plain_half_kept_by_4_byte_store
# the slot holds local plain bytes (a local spill, then a byte store);
# a uniform 4-byte store into its low half spills a pair of halves, and
# the high half, still the local bytes, must keep their label
# hook: tuner
ldxw %r2, [%r1+32]
stxw [%r10-4], %r2
stb [%r10-1], 0
stw [%r10-8], 0
ldxw %r3, [%r10-4]
stxw [%r1+156], %r3 # ERROR E033
mov %r0, 0
exit

-- bad_local_plain_half_read_whole
# the same slot read back as 8 bytes
# hook: tuner
ldxw %r2, [%r1+32]
stxw [%r10-4], %r2
stb [%r10-1], 0
stw [%r10-8], 0
ldxdw %r3, [%r10-8]
stxw [%r1+156], %r3 # ERROR E033
mov %r0, 0
exit

-- ok_local_plain_bytes_overwritten_whole
# an 8-byte store replaces all the local bytes of the slot
# hook: tuner
ldxw %r2, [%r1+32]
stxw [%r10-4], %r2
stb [%r10-1], 0
stdw [%r10-8], 0
ldxw %r3, [%r10-4]
stxw [%r1+156], %r3
mov %r0, 0
exit

-- bad_pruning_plain_uniform_bytes_cover_local_spill
# the path that stores uniform plain bytes reaches the join first; the
# path that spilled a local value there must not be pruned against it
# hook: tuner
ldxw %r2, [%r1+32]
ldxw %r4, [%r1+36]
jeq %r4, 0, plain
stxdw [%r10-8], %r2
ja join
plain:
stb [%r10-8], 1
stb [%r10-7], 1
stb [%r10-6], 1
stb [%r10-5], 1
stb [%r10-4], 1
stb [%r10-3], 1
stb [%r10-2], 1
stb [%r10-1], 1
join:
ldxdw %r3, [%r10-8]
and %r3, 7
stxw [%r1+156], %r3 # ERROR E033
mov %r0, 0
exit

-- ok_pruning_plain_bytes_cover_uniform_spill
# the same shape with a uniform value spilled
# hook: tuner
ldxw %r2, [%r1+36]
ldxw %r4, [%r1+36]
jeq %r4, 0, plain
stxdw [%r10-8], %r2
ja join
plain:
stb [%r10-8], 1
stb [%r10-7], 1
stb [%r10-6], 1
stb [%r10-5], 1
stb [%r10-4], 1
stb [%r10-3], 1
stb [%r10-2], 1
stb [%r10-1], 1
join:
ldxdw %r3, [%r10-8]
and %r3, 7
stxw [%r1+156], %r3
mov %r0, 0
exit

-- bad_cmpxchg_local_comparand
# cmpxchg stores a uniform number, but whether it stores depends on the
# local comparand in r0: what the slot holds afterwards is local
# hook: tuner
ldxw %r2, [%r1+32]
stdw [%r10-8], 0
mov %r0, %r2
mov %r4, 1
lock cmpxchg [%r10-8], %r4
ldxdw %r3, [%r10-8]
stxw [%r1+156], %r3 # ERROR E033
mov %r0, 0
exit

-- ok_cmpxchg_uniform_comparand
# hook: tuner
ldxw %r2, [%r1+36]
stdw [%r10-8], 0
mov %r0, %r2
mov %r4, 1
lock cmpxchg [%r10-8], %r4
ldxdw %r3, [%r10-8]
and %r3, 7
stxw [%r1+156], %r3
mov %r0, 0
exit

-- bad_callee_branch_decides_caller_jump
# the callee tests a copy of the local value (the two sides meet at its
# exit); back in the caller, the same test is decided on each path
# hook: tuner
mov %r6, %r1
ldxw %r7, [%r6+32]
mov %r1, %r7
call h
jgt %r7, 5, big
stw [%r6+156], 1 # ERROR E033
mov %r0, 0
exit
big:
stw [%r6+156], 2
mov %r0, 0
exit
h:
jgt %r1, 5, hb
mov %r0, 0
exit
hb:
mov %r0, 0
exit

-- bad_lru_lookup_with_local_key_then_decide
# a lookup reorders an LRU map (which entry an update evicts next): after
# a lookup with a local key, what a lookup with a uniform key finds may
# differ between ranks, though no program updates the map
# hook: tuner
mov %r9, %r1
ldxw %r6, [%r1+32]
stxw [%r10-4], %r6
mov %r2, %r10
add %r2, -4
lddw %r1, map(7)
call 1
stw [%r10-4], 0
mov %r2, %r10
add %r2, -4
lddw %r1, map(7)
call 1
jeq %r0, 0, out
ldxdw %r3, [%r0+0]
and %r3, 15
stxw [%r9+156], %r3 # ERROR E033
out:
mov %r0, 0
exit

-- bad_printk_result_decides
# bpf_printk returns whether its rate limit let the line through
# hook: tuner
mov %r9, %r1
lddw %r1, 0x0a6425
stxdw [%r10-8], %r1
mov %r1, %r10
add %r1, -8
mov %r2, 4
mov %r3, 1
call 6
and %r0, 7
stxw [%r9+156], %r0 # ERROR E033
mov %r0, 0
exit

-- bad_update_noexist_result_decides
# whether an update with BPF_NOEXIST succeeds depends on what the map holds
# hook: tuner
mov %r9, %r1
stdw [%r10-8], 3
stdw [%r10-16], 1
lddw %r1, map(1)
mov %r2, %r10
add %r2, -8
mov %r3, %r10
add %r3, -16
mov %r4, 1
call 2
jne %r0, 0, fail
stw [%r9+148], 1 # ERROR E033
fail:
mov %r0, 0
exit

-- bad_cpu_id_decides
# hook: tuner
mov %r9, %r1
call 8
and %r0, 3
stxw [%r9+152], %r0 # ERROR E033
mov %r0, 0
exit

-- bad_loop_bounded_by_local_counts_channels
# the number of iterations is local, so is the counter after the loop
# hook: tuner
ldxw %r7, [%r1+32]
and %r7, 7
mov %r6, 0
loop:
jge %r6, %r7, done
add %r6, 1
ja loop
done:
stxw [%r1+156], %r6 # ERROR E033
mov %r0, 0
exit

-- bad_early_loop_exit_on_local_leaves_counter
# a loop of a uniform bound that a local test leaves early
# hook: tuner
ldxw %r7, [%r1+32]
mov %r6, 0
loop:
jge %r6, 4, done
jeq %r7, %r6, done
add %r6, 1
ja loop
done:
stxw [%r1+156], %r6 # ERROR E033
mov %r0, 0
exit

-- ok_uniform_loop_with_local_work_inside
# a loop of a uniform bound whose body only counts local data elsewhere
# hook: tuner
mov %r9, %r1
ldxw %r7, [%r1+32]
mov %r6, 0
mov %r8, 0
loop:
jge %r6, 4, done
jeq %r7, %r6, skip
add %r8, 1
skip:
add %r6, 1
ja loop
done:
stxw [%r9+156], %r6
mov %r0, 0
exit

-- bad_callee_writes_caller_stack_under_local_branch
# the callee writes the caller's slot on one side of a local branch: the
# slot is local in the caller after the call, on every path
# hook: tuner
mov %r9, %r1
stdw [%r10-8], 1
mov %r1, %r10
add %r1, -8
ldxw %r2, [%r9+32]
call local f
ldxdw %r3, [%r10-8]
stxw [%r9+156], %r3 # ERROR E033
mov %r0, 0
exit
f:
jgt %r2, 5, skip
stdw [%r1+0], 2
skip:
mov %r0, 0
exit

-- bad_value_written_on_one_side_then_tested
# the value is uniform on the path that does not write it, and each path
# alone decides on a constant: the two runs do not
# hook: tuner
ldxw %r6, [%r1+32]
mov %r7, 0
jgt %r6, 5, join
mov %r7, 1
join:
jeq %r7, 0, skip
stw [%r1+148], 1 # ERROR E033
skip:
mov %r0, 0
exit

-- ok_local_region_writes_only_dead_values
# a local branch whose region writes nothing the decision reads
# hook: tuner
ldxw %r6, [%r1+32]
mov %r8, 0
jgt %r6, 5, join
mov %r8, 1
join:
ldxw %r7, [%r1+24]
and %r7, 3
stxw [%r1+148], %r7
mov %r0, 0
exit

-- bad_return_on_one_side_of_local_branch
# hook: tuner
ldxw %r6, [%r1+32]
jgt %r6, 5, other
mov %r0, 1
exit # ERROR E033
other:
mov %r0, 0
exit

-- bad_half_written_under_local_branch
# one 4-byte half of a slot written under a local branch, the slot read whole
# hook: tuner
mov %r9, %r1
stdw [%r10-8], 0
ldxw %r6, [%r1+32]
jgt %r6, 5, join
stw [%r10-4], 1
join:
ldxdw %r3, [%r10-8]
stxw [%r9+156], %r3 # ERROR E033
mov %r0, 0
exit
