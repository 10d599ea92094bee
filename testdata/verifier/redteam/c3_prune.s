# Red team, class 3: state pruning with many linked copies. A state
# stored for pruning must be at least as precise as the path it stands
# for: when it cannot record every link between copies of a value, it must
# not prune. Each program first makes 17 distinct values, each with two
# linked copies on the stack (the filler), so that the links of the pair
# the attack uses are past any small fixed table; then one path gives the
# pair two linked copies of one value (and proves the access safe through
# the link), and a later path gives it two unrelated values of the same
# range (the second from another context field) and reaches
# the same point. Each is refused where the unrelated copy is used.
# Maps: see c1_ptrdiff.s.

-- bad_prune_links_stack_pair
# the linked pair is at fp-16 and fp-8; the checked copy bounds the other
mov %r9, %r1
stw [%r10-4], 0
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, out
mov %r8, %r0
ldxw %r3, [%r9+0]
mov %r4, %r3
stxdw [%r10-512], %r3
stxdw [%r10-504], %r4
ldxw %r3, [%r9+4]
mov %r4, %r3
stxdw [%r10-496], %r3
stxdw [%r10-488], %r4
ldxw %r3, [%r9+0]
mov %r4, %r3
stxdw [%r10-480], %r3
stxdw [%r10-472], %r4
ldxw %r3, [%r9+4]
mov %r4, %r3
stxdw [%r10-464], %r3
stxdw [%r10-456], %r4
ldxw %r3, [%r9+0]
mov %r4, %r3
stxdw [%r10-448], %r3
stxdw [%r10-440], %r4
ldxw %r3, [%r9+4]
mov %r4, %r3
stxdw [%r10-432], %r3
stxdw [%r10-424], %r4
ldxw %r3, [%r9+0]
mov %r4, %r3
stxdw [%r10-416], %r3
stxdw [%r10-408], %r4
ldxw %r3, [%r9+4]
mov %r4, %r3
stxdw [%r10-400], %r3
stxdw [%r10-392], %r4
ldxw %r3, [%r9+0]
mov %r4, %r3
stxdw [%r10-384], %r3
stxdw [%r10-376], %r4
ldxw %r3, [%r9+4]
mov %r4, %r3
stxdw [%r10-368], %r3
stxdw [%r10-360], %r4
ldxw %r3, [%r9+0]
mov %r4, %r3
stxdw [%r10-352], %r3
stxdw [%r10-344], %r4
ldxw %r3, [%r9+4]
mov %r4, %r3
stxdw [%r10-336], %r3
stxdw [%r10-328], %r4
ldxw %r3, [%r9+0]
mov %r4, %r3
stxdw [%r10-320], %r3
stxdw [%r10-312], %r4
ldxw %r3, [%r9+4]
mov %r4, %r3
stxdw [%r10-304], %r3
stxdw [%r10-296], %r4
ldxw %r3, [%r9+0]
mov %r4, %r3
stxdw [%r10-288], %r3
stxdw [%r10-280], %r4
ldxw %r3, [%r9+4]
mov %r4, %r3
stxdw [%r10-272], %r3
stxdw [%r10-264], %r4
ldxw %r3, [%r9+0]
mov %r4, %r3
stxdw [%r10-256], %r3
stxdw [%r10-248], %r4
ldxh %r3, [%r9+64]
ldxw %r2, [%r9+4]
jeq %r2, 0, linked
stxdw [%r10-16], %r3
ldxw %r4, [%r9+68]
and %r4, 0xffff
stxdw [%r10-8], %r4
ja check
linked:
mov %r4, %r3
stxdw [%r10-16], %r3
stxdw [%r10-8], %r4
check:
ldxdw %r1, [%r10-16]
jgt %r1, 5, out
ldxdw %r2, [%r10-8]
lsh %r2, 3
add %r8, %r2
ldxdw %r0, [%r8+0] # ERROR E014
and %r0, 1
exit
out:
mov %r0, 0
exit

-- bad_prune_links_store_oob
# as above, the check on fp-8 bounds the copy at fp-16, used for a store
mov %r9, %r1
stw [%r10-4], 0
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, out
mov %r8, %r0
ldxw %r3, [%r9+0]
mov %r4, %r3
stxdw [%r10-512], %r3
stxdw [%r10-504], %r4
ldxw %r3, [%r9+4]
mov %r4, %r3
stxdw [%r10-496], %r3
stxdw [%r10-488], %r4
ldxw %r3, [%r9+0]
mov %r4, %r3
stxdw [%r10-480], %r3
stxdw [%r10-472], %r4
ldxw %r3, [%r9+4]
mov %r4, %r3
stxdw [%r10-464], %r3
stxdw [%r10-456], %r4
ldxw %r3, [%r9+0]
mov %r4, %r3
stxdw [%r10-448], %r3
stxdw [%r10-440], %r4
ldxw %r3, [%r9+4]
mov %r4, %r3
stxdw [%r10-432], %r3
stxdw [%r10-424], %r4
ldxw %r3, [%r9+0]
mov %r4, %r3
stxdw [%r10-416], %r3
stxdw [%r10-408], %r4
ldxw %r3, [%r9+4]
mov %r4, %r3
stxdw [%r10-400], %r3
stxdw [%r10-392], %r4
ldxw %r3, [%r9+0]
mov %r4, %r3
stxdw [%r10-384], %r3
stxdw [%r10-376], %r4
ldxw %r3, [%r9+4]
mov %r4, %r3
stxdw [%r10-368], %r3
stxdw [%r10-360], %r4
ldxw %r3, [%r9+0]
mov %r4, %r3
stxdw [%r10-352], %r3
stxdw [%r10-344], %r4
ldxw %r3, [%r9+4]
mov %r4, %r3
stxdw [%r10-336], %r3
stxdw [%r10-328], %r4
ldxw %r3, [%r9+0]
mov %r4, %r3
stxdw [%r10-320], %r3
stxdw [%r10-312], %r4
ldxw %r3, [%r9+4]
mov %r4, %r3
stxdw [%r10-304], %r3
stxdw [%r10-296], %r4
ldxw %r3, [%r9+0]
mov %r4, %r3
stxdw [%r10-288], %r3
stxdw [%r10-280], %r4
ldxw %r3, [%r9+4]
mov %r4, %r3
stxdw [%r10-272], %r3
stxdw [%r10-264], %r4
ldxw %r3, [%r9+0]
mov %r4, %r3
stxdw [%r10-256], %r3
stxdw [%r10-248], %r4
ldxh %r3, [%r9+64]
ldxw %r2, [%r9+0]
jeq %r2, 0, linked
ldxw %r4, [%r9+68]
and %r4, 0xffff
stxdw [%r10-16], %r4
stxdw [%r10-8], %r3
ja check
linked:
mov %r4, %r3
stxdw [%r10-16], %r4
stxdw [%r10-8], %r3
check:
ldxdw %r1, [%r10-8]
jgt %r1, 40, out
ldxdw %r2, [%r10-16]
add %r8, %r2
stdw [%r8+0], -1 # ERROR E014
out:
mov %r0, 0
exit

-- bad_prune_links_stack_index
# the unrelated copy indexes the stack
mov %r9, %r1
ldxw %r3, [%r9+0]
mov %r4, %r3
stxdw [%r10-480], %r3
stxdw [%r10-472], %r4
ldxw %r3, [%r9+4]
mov %r4, %r3
stxdw [%r10-464], %r3
stxdw [%r10-456], %r4
ldxw %r3, [%r9+0]
mov %r4, %r3
stxdw [%r10-448], %r3
stxdw [%r10-440], %r4
ldxw %r3, [%r9+4]
mov %r4, %r3
stxdw [%r10-432], %r3
stxdw [%r10-424], %r4
ldxw %r3, [%r9+0]
mov %r4, %r3
stxdw [%r10-416], %r3
stxdw [%r10-408], %r4
ldxw %r3, [%r9+4]
mov %r4, %r3
stxdw [%r10-400], %r3
stxdw [%r10-392], %r4
ldxw %r3, [%r9+0]
mov %r4, %r3
stxdw [%r10-384], %r3
stxdw [%r10-376], %r4
ldxw %r3, [%r9+4]
mov %r4, %r3
stxdw [%r10-368], %r3
stxdw [%r10-360], %r4
ldxw %r3, [%r9+0]
mov %r4, %r3
stxdw [%r10-352], %r3
stxdw [%r10-344], %r4
ldxw %r3, [%r9+4]
mov %r4, %r3
stxdw [%r10-336], %r3
stxdw [%r10-328], %r4
ldxw %r3, [%r9+0]
mov %r4, %r3
stxdw [%r10-320], %r3
stxdw [%r10-312], %r4
ldxw %r3, [%r9+4]
mov %r4, %r3
stxdw [%r10-304], %r3
stxdw [%r10-296], %r4
ldxw %r3, [%r9+0]
mov %r4, %r3
stxdw [%r10-288], %r3
stxdw [%r10-280], %r4
ldxw %r3, [%r9+4]
mov %r4, %r3
stxdw [%r10-272], %r3
stxdw [%r10-264], %r4
ldxw %r3, [%r9+0]
mov %r4, %r3
stxdw [%r10-256], %r3
stxdw [%r10-248], %r4
ldxw %r3, [%r9+4]
mov %r4, %r3
stxdw [%r10-240], %r3
stxdw [%r10-232], %r4
ldxw %r3, [%r9+0]
mov %r4, %r3
stxdw [%r10-224], %r3
stxdw [%r10-216], %r4
ldxh %r3, [%r9+64]
ldxw %r2, [%r9+4]
jeq %r2, 0, linked
stxdw [%r10-16], %r3
ldxw %r4, [%r9+68]
and %r4, 0xffff
stxdw [%r10-8], %r4
ja check
linked:
mov %r4, %r3
stxdw [%r10-16], %r3
stxdw [%r10-8], %r4
check:
ldxdw %r1, [%r10-16]
jgt %r1, 7, out
ldxdw %r2, [%r10-8]
mov %r5, %r10
add %r5, -32
add %r5, %r2
stb [%r5+0], 1 # ERROR E013
out:
mov %r0, 0
exit

-- bad_prune_links_callee_registers
# the caller's stack holds the filler; the callee keeps the pair in
# registers r6 and r7
mov %r9, %r1
stw [%r10-4], 0
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, out
mov %r8, %r0
ldxw %r3, [%r9+0]
mov %r4, %r3
stxdw [%r10-512], %r3
stxdw [%r10-504], %r4
ldxw %r3, [%r9+4]
mov %r4, %r3
stxdw [%r10-496], %r3
stxdw [%r10-488], %r4
ldxw %r3, [%r9+0]
mov %r4, %r3
stxdw [%r10-480], %r3
stxdw [%r10-472], %r4
ldxw %r3, [%r9+4]
mov %r4, %r3
stxdw [%r10-464], %r3
stxdw [%r10-456], %r4
ldxw %r3, [%r9+0]
mov %r4, %r3
stxdw [%r10-448], %r3
stxdw [%r10-440], %r4
ldxw %r3, [%r9+4]
mov %r4, %r3
stxdw [%r10-432], %r3
stxdw [%r10-424], %r4
ldxw %r3, [%r9+0]
mov %r4, %r3
stxdw [%r10-416], %r3
stxdw [%r10-408], %r4
ldxw %r3, [%r9+4]
mov %r4, %r3
stxdw [%r10-400], %r3
stxdw [%r10-392], %r4
ldxw %r3, [%r9+0]
mov %r4, %r3
stxdw [%r10-384], %r3
stxdw [%r10-376], %r4
ldxw %r3, [%r9+4]
mov %r4, %r3
stxdw [%r10-368], %r3
stxdw [%r10-360], %r4
ldxw %r3, [%r9+0]
mov %r4, %r3
stxdw [%r10-352], %r3
stxdw [%r10-344], %r4
ldxw %r3, [%r9+4]
mov %r4, %r3
stxdw [%r10-336], %r3
stxdw [%r10-328], %r4
ldxw %r3, [%r9+0]
mov %r4, %r3
stxdw [%r10-320], %r3
stxdw [%r10-312], %r4
ldxw %r3, [%r9+4]
mov %r4, %r3
stxdw [%r10-304], %r3
stxdw [%r10-296], %r4
ldxw %r3, [%r9+0]
mov %r4, %r3
stxdw [%r10-288], %r3
stxdw [%r10-280], %r4
ldxw %r3, [%r9+4]
mov %r4, %r3
stxdw [%r10-272], %r3
stxdw [%r10-264], %r4
ldxw %r3, [%r9+0]
mov %r4, %r3
stxdw [%r10-256], %r3
stxdw [%r10-248], %r4
mov %r1, %r9
mov %r2, %r8
call local f
mov %r0, 0
exit
out:
mov %r0, 0
exit
f:
mov %r8, %r2
ldxh %r6, [%r1+64]
ldxw %r2, [%r1+4]
jeq %r2, 0, linked
ldxw %r7, [%r1+68]
and %r7, 0xffff
ja check
linked:
mov %r7, %r6
check:
jgt %r6, 5, done
lsh %r7, 3
add %r8, %r7
ldxdw %r0, [%r8+0] # ERROR E014
done:
mov %r0, 0
exit

-- bad_prune_links_helper_size
# the unrelated copy is the size of bpf_ringbuf_output's data
mov %r9, %r1
stw [%r10-4], 0
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, out
mov %r8, %r0
ldxw %r3, [%r9+0]
mov %r4, %r3
stxdw [%r10-512], %r3
stxdw [%r10-504], %r4
ldxw %r3, [%r9+4]
mov %r4, %r3
stxdw [%r10-496], %r3
stxdw [%r10-488], %r4
ldxw %r3, [%r9+0]
mov %r4, %r3
stxdw [%r10-480], %r3
stxdw [%r10-472], %r4
ldxw %r3, [%r9+4]
mov %r4, %r3
stxdw [%r10-464], %r3
stxdw [%r10-456], %r4
ldxw %r3, [%r9+0]
mov %r4, %r3
stxdw [%r10-448], %r3
stxdw [%r10-440], %r4
ldxw %r3, [%r9+4]
mov %r4, %r3
stxdw [%r10-432], %r3
stxdw [%r10-424], %r4
ldxw %r3, [%r9+0]
mov %r4, %r3
stxdw [%r10-416], %r3
stxdw [%r10-408], %r4
ldxw %r3, [%r9+4]
mov %r4, %r3
stxdw [%r10-400], %r3
stxdw [%r10-392], %r4
ldxw %r3, [%r9+0]
mov %r4, %r3
stxdw [%r10-384], %r3
stxdw [%r10-376], %r4
ldxw %r3, [%r9+4]
mov %r4, %r3
stxdw [%r10-368], %r3
stxdw [%r10-360], %r4
ldxw %r3, [%r9+0]
mov %r4, %r3
stxdw [%r10-352], %r3
stxdw [%r10-344], %r4
ldxw %r3, [%r9+4]
mov %r4, %r3
stxdw [%r10-336], %r3
stxdw [%r10-328], %r4
ldxw %r3, [%r9+0]
mov %r4, %r3
stxdw [%r10-320], %r3
stxdw [%r10-312], %r4
ldxw %r3, [%r9+4]
mov %r4, %r3
stxdw [%r10-304], %r3
stxdw [%r10-296], %r4
ldxw %r3, [%r9+0]
mov %r4, %r3
stxdw [%r10-288], %r3
stxdw [%r10-280], %r4
ldxw %r3, [%r9+4]
mov %r4, %r3
stxdw [%r10-272], %r3
stxdw [%r10-264], %r4
ldxw %r3, [%r9+0]
mov %r4, %r3
stxdw [%r10-256], %r3
stxdw [%r10-248], %r4
ldxh %r3, [%r9+64]
ldxw %r2, [%r9+4]
jeq %r2, 0, linked
stxdw [%r10-16], %r3
ldxw %r4, [%r9+68]
and %r4, 0xffff
stxdw [%r10-8], %r4
ja check
linked:
mov %r4, %r3
stxdw [%r10-16], %r3
stxdw [%r10-8], %r4
check:
ldxdw %r1, [%r10-16]
jgt %r1, 48, out
ldxdw %r3, [%r10-8]
lddw %r1, map(2)
mov %r2, %r8
mov %r4, 0
call 130 # ERROR E020
out:
mov %r0, 0
exit

-- bad_prune_links_loop_head
# the pair's states meet at a loop head: the first iteration (linked) is
# stored there, the second (unrelated) is pruned against it
mov %r9, %r1
stw [%r10-4], 0
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, out
mov %r8, %r0
ldxw %r3, [%r9+0]
mov %r4, %r3
stxdw [%r10-512], %r3
stxdw [%r10-504], %r4
ldxw %r3, [%r9+4]
mov %r4, %r3
stxdw [%r10-496], %r3
stxdw [%r10-488], %r4
ldxw %r3, [%r9+0]
mov %r4, %r3
stxdw [%r10-480], %r3
stxdw [%r10-472], %r4
ldxw %r3, [%r9+4]
mov %r4, %r3
stxdw [%r10-464], %r3
stxdw [%r10-456], %r4
ldxw %r3, [%r9+0]
mov %r4, %r3
stxdw [%r10-448], %r3
stxdw [%r10-440], %r4
ldxw %r3, [%r9+4]
mov %r4, %r3
stxdw [%r10-432], %r3
stxdw [%r10-424], %r4
ldxw %r3, [%r9+0]
mov %r4, %r3
stxdw [%r10-416], %r3
stxdw [%r10-408], %r4
ldxw %r3, [%r9+4]
mov %r4, %r3
stxdw [%r10-400], %r3
stxdw [%r10-392], %r4
ldxw %r3, [%r9+0]
mov %r4, %r3
stxdw [%r10-384], %r3
stxdw [%r10-376], %r4
ldxw %r3, [%r9+4]
mov %r4, %r3
stxdw [%r10-368], %r3
stxdw [%r10-360], %r4
ldxw %r3, [%r9+0]
mov %r4, %r3
stxdw [%r10-352], %r3
stxdw [%r10-344], %r4
ldxw %r3, [%r9+4]
mov %r4, %r3
stxdw [%r10-336], %r3
stxdw [%r10-328], %r4
ldxw %r3, [%r9+0]
mov %r4, %r3
stxdw [%r10-320], %r3
stxdw [%r10-312], %r4
ldxw %r3, [%r9+4]
mov %r4, %r3
stxdw [%r10-304], %r3
stxdw [%r10-296], %r4
ldxw %r3, [%r9+0]
mov %r4, %r3
stxdw [%r10-288], %r3
stxdw [%r10-280], %r4
ldxw %r3, [%r9+4]
mov %r4, %r3
stxdw [%r10-272], %r3
stxdw [%r10-264], %r4
ldxw %r3, [%r9+0]
mov %r4, %r3
stxdw [%r10-256], %r3
stxdw [%r10-248], %r4
ldxdw %r3, [%r9+8]
mov %r4, %r3
stxdw [%r10-16], %r3
stxdw [%r10-8], %r4
mov %r6, 0
loop:
ldxdw %r1, [%r10-16]
jgt %r1, 5, next
ldxdw %r2, [%r10-8]
lsh %r2, 3
mov %r5, %r8
add %r5, %r2
ldxdw %r0, [%r5+0] # ERROR E014
next:
ldxdw %r3, [%r9+8]
stxdw [%r10-16], %r3
ldxdw %r4, [%r9+8]
stxdw [%r10-8], %r4
add %r6, 1
jlt %r6, 2, loop
out:
mov %r0, 0
exit

-- bad_prune_links_many_copies
# besides the filler, one value is copied into every free register and
# eight more slots (many copies, one link), and the pair still comes last
mov %r9, %r1
stw [%r10-4], 0
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, out
mov %r8, %r0
ldxw %r3, [%r9+0]
mov %r4, %r3
stxdw [%r10-512], %r3
stxdw [%r10-504], %r4
ldxw %r3, [%r9+4]
mov %r4, %r3
stxdw [%r10-496], %r3
stxdw [%r10-488], %r4
ldxw %r3, [%r9+0]
mov %r4, %r3
stxdw [%r10-480], %r3
stxdw [%r10-472], %r4
ldxw %r3, [%r9+4]
mov %r4, %r3
stxdw [%r10-464], %r3
stxdw [%r10-456], %r4
ldxw %r3, [%r9+0]
mov %r4, %r3
stxdw [%r10-448], %r3
stxdw [%r10-440], %r4
ldxw %r3, [%r9+4]
mov %r4, %r3
stxdw [%r10-432], %r3
stxdw [%r10-424], %r4
ldxw %r3, [%r9+0]
mov %r4, %r3
stxdw [%r10-416], %r3
stxdw [%r10-408], %r4
ldxw %r3, [%r9+4]
mov %r4, %r3
stxdw [%r10-400], %r3
stxdw [%r10-392], %r4
ldxw %r3, [%r9+0]
mov %r4, %r3
stxdw [%r10-384], %r3
stxdw [%r10-376], %r4
ldxw %r3, [%r9+4]
mov %r4, %r3
stxdw [%r10-368], %r3
stxdw [%r10-360], %r4
ldxw %r3, [%r9+0]
mov %r4, %r3
stxdw [%r10-352], %r3
stxdw [%r10-344], %r4
ldxw %r3, [%r9+4]
mov %r4, %r3
stxdw [%r10-336], %r3
stxdw [%r10-328], %r4
ldxw %r3, [%r9+0]
mov %r4, %r3
stxdw [%r10-320], %r3
stxdw [%r10-312], %r4
ldxw %r3, [%r9+4]
mov %r4, %r3
stxdw [%r10-304], %r3
stxdw [%r10-296], %r4
ldxw %r3, [%r9+0]
mov %r4, %r3
stxdw [%r10-288], %r3
stxdw [%r10-280], %r4
ldxw %r3, [%r9+4]
mov %r4, %r3
stxdw [%r10-272], %r3
stxdw [%r10-264], %r4
ldxdw %r0, [%r9+8]
mov %r1, %r0
mov %r2, %r0
mov %r3, %r0
mov %r4, %r0
mov %r5, %r0
mov %r6, %r0
mov %r7, %r0
stxdw [%r10-256], %r0
stxdw [%r10-248], %r0
stxdw [%r10-240], %r0
stxdw [%r10-232], %r0
stxdw [%r10-224], %r0
stxdw [%r10-216], %r0
stxdw [%r10-208], %r0
stxdw [%r10-200], %r0
ldxh %r3, [%r9+64]
ldxw %r2, [%r9+4]
jeq %r2, 0, linked
stxdw [%r10-16], %r3
ldxw %r4, [%r9+68]
and %r4, 0xffff
stxdw [%r10-8], %r4
ja check
linked:
mov %r4, %r3
stxdw [%r10-16], %r3
stxdw [%r10-8], %r4
check:
ldxdw %r1, [%r10-16]
jgt %r1, 5, out
ldxdw %r2, [%r10-8]
lsh %r2, 3
add %r8, %r2
ldxdw %r0, [%r8+0] # ERROR E014
and %r0, 1
exit
out:
mov %r0, 0
exit

-- bad_prune_links_signed_check
# a signed check on one copy, the other used as a stack offset
mov %r9, %r1
ldxw %r3, [%r9+0]
mov %r4, %r3
stxdw [%r10-480], %r3
stxdw [%r10-472], %r4
ldxw %r3, [%r9+4]
mov %r4, %r3
stxdw [%r10-464], %r3
stxdw [%r10-456], %r4
ldxw %r3, [%r9+0]
mov %r4, %r3
stxdw [%r10-448], %r3
stxdw [%r10-440], %r4
ldxw %r3, [%r9+4]
mov %r4, %r3
stxdw [%r10-432], %r3
stxdw [%r10-424], %r4
ldxw %r3, [%r9+0]
mov %r4, %r3
stxdw [%r10-416], %r3
stxdw [%r10-408], %r4
ldxw %r3, [%r9+4]
mov %r4, %r3
stxdw [%r10-400], %r3
stxdw [%r10-392], %r4
ldxw %r3, [%r9+0]
mov %r4, %r3
stxdw [%r10-384], %r3
stxdw [%r10-376], %r4
ldxw %r3, [%r9+4]
mov %r4, %r3
stxdw [%r10-368], %r3
stxdw [%r10-360], %r4
ldxw %r3, [%r9+0]
mov %r4, %r3
stxdw [%r10-352], %r3
stxdw [%r10-344], %r4
ldxw %r3, [%r9+4]
mov %r4, %r3
stxdw [%r10-336], %r3
stxdw [%r10-328], %r4
ldxw %r3, [%r9+0]
mov %r4, %r3
stxdw [%r10-320], %r3
stxdw [%r10-312], %r4
ldxw %r3, [%r9+4]
mov %r4, %r3
stxdw [%r10-304], %r3
stxdw [%r10-296], %r4
ldxw %r3, [%r9+0]
mov %r4, %r3
stxdw [%r10-288], %r3
stxdw [%r10-280], %r4
ldxw %r3, [%r9+4]
mov %r4, %r3
stxdw [%r10-272], %r3
stxdw [%r10-264], %r4
ldxw %r3, [%r9+0]
mov %r4, %r3
stxdw [%r10-256], %r3
stxdw [%r10-248], %r4
ldxw %r3, [%r9+4]
mov %r4, %r3
stxdw [%r10-240], %r3
stxdw [%r10-232], %r4
ldxw %r3, [%r9+0]
mov %r4, %r3
stxdw [%r10-224], %r3
stxdw [%r10-216], %r4
ldxsh %r3, [%r9+64]
ldxw %r2, [%r9+4]
jeq %r2, 0, linked
stxdw [%r10-16], %r3
ldxw %r4, [%r9+68]
movsx1664 %r4, %r4
stxdw [%r10-8], %r4
ja check
linked:
mov %r4, %r3
stxdw [%r10-16], %r3
stxdw [%r10-8], %r4
check:
ldxdw %r1, [%r10-16]
jsgt %r1, 0, out
jslt %r1, -15, out
ldxdw %r2, [%r10-8]
mov %r5, %r10
add %r5, %r2
ldxb %r0, [%r5-1] # ERROR E013
exit
out:
mov %r0, 0
exit

-- ok_prune_links_all_linked
# both paths link the pair: safe, and must stay accepted
mov %r9, %r1
stw [%r10-4], 0
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, out
mov %r8, %r0
ldxw %r3, [%r9+0]
mov %r4, %r3
stxdw [%r10-512], %r3
stxdw [%r10-504], %r4
ldxw %r3, [%r9+4]
mov %r4, %r3
stxdw [%r10-496], %r3
stxdw [%r10-488], %r4
ldxw %r3, [%r9+0]
mov %r4, %r3
stxdw [%r10-480], %r3
stxdw [%r10-472], %r4
ldxw %r3, [%r9+4]
mov %r4, %r3
stxdw [%r10-464], %r3
stxdw [%r10-456], %r4
ldxw %r3, [%r9+0]
mov %r4, %r3
stxdw [%r10-448], %r3
stxdw [%r10-440], %r4
ldxw %r3, [%r9+4]
mov %r4, %r3
stxdw [%r10-432], %r3
stxdw [%r10-424], %r4
ldxw %r3, [%r9+0]
mov %r4, %r3
stxdw [%r10-416], %r3
stxdw [%r10-408], %r4
ldxw %r3, [%r9+4]
mov %r4, %r3
stxdw [%r10-400], %r3
stxdw [%r10-392], %r4
ldxw %r3, [%r9+0]
mov %r4, %r3
stxdw [%r10-384], %r3
stxdw [%r10-376], %r4
ldxw %r3, [%r9+4]
mov %r4, %r3
stxdw [%r10-368], %r3
stxdw [%r10-360], %r4
ldxw %r3, [%r9+0]
mov %r4, %r3
stxdw [%r10-352], %r3
stxdw [%r10-344], %r4
ldxw %r3, [%r9+4]
mov %r4, %r3
stxdw [%r10-336], %r3
stxdw [%r10-328], %r4
ldxw %r3, [%r9+0]
mov %r4, %r3
stxdw [%r10-320], %r3
stxdw [%r10-312], %r4
ldxw %r3, [%r9+4]
mov %r4, %r3
stxdw [%r10-304], %r3
stxdw [%r10-296], %r4
ldxw %r3, [%r9+0]
mov %r4, %r3
stxdw [%r10-288], %r3
stxdw [%r10-280], %r4
ldxw %r3, [%r9+4]
mov %r4, %r3
stxdw [%r10-272], %r3
stxdw [%r10-264], %r4
ldxw %r3, [%r9+0]
mov %r4, %r3
stxdw [%r10-256], %r3
stxdw [%r10-248], %r4
ldxdw %r3, [%r9+8]
ldxw %r2, [%r9+4]
jeq %r2, 0, linked
ldxdw %r3, [%r9+8]
mov %r4, %r3
stxdw [%r10-16], %r3
stxdw [%r10-8], %r4
ja check
linked:
mov %r4, %r3
stxdw [%r10-16], %r3
stxdw [%r10-8], %r4
check:
ldxdw %r1, [%r10-16]
jgt %r1, 5, out
ldxdw %r2, [%r10-8]
lsh %r2, 3
add %r8, %r2
ldxdw %r0, [%r8+0]
and %r0, 1
exit
out:
mov %r0, 0
exit

