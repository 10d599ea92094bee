# Soundness regressions: constructions that must stay refused whatever
# the pass (merged, path-sensitive with joins, exact). See structure.s for
# the format and the maps.

# Two lookups swapped on two paths: after the join neither pointer may be
# taken for the other, so their difference is no constant.
-- bad_ptr_diff_after_join_of_lookups
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
mov %r2, %r6
mov %r3, %r7
jeq %r1, 0, swap
ja join
swap:
mov %r2, %r7
mov %r3, %r6
join:
sub %r2, %r3 # ERROR E023
add %r6, %r2
ldxb %r0, [%r6+0]
exit
out:
mov %r0, 0
exit

-- bad_ptr_order_after_join_of_lookups
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
mov %r2, %r6
mov %r3, %r7
jeq %r1, 0, swap
ja join
swap:
mov %r2, %r7
mov %r3, %r6
join:
jgt %r2, %r3, out # ERROR E024
mov %r0, 1
exit
out:
mov %r0, 0
exit

# The same lookup on both paths stays one object: its difference with
# itself is a constant.
-- ok_ptr_diff_same_lookup_after_join
mov %r9, %r1
stw [%r10-4], 0
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, out
mov %r6, %r0
mov %r7, %r0
ldxw %r1, [%r9+0]
jeq %r1, 0, skip
add %r7, 8
skip:
mov %r2, %r7
sub %r2, %r6
and %r2, 15
add %r6, %r2
ldxw %r0, [%r6+0]
and %r0, 255
exit
out:
mov %r0, 0
exit

# A pointer moved far from its value: the machine compares addresses as
# unsigned numbers, which may wrap.
-- bad_ptr_order_outside_object
stw [%r10-4], 0
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, out
mov %r6, %r0
mov %r7, %r0
lddw %r1, 0x4000000000000000
add %r7, %r1
jgt %r7, %r6, out # ERROR E024
mov %r0, 1
exit
out:
mov %r0, 0
exit

-- bad_moved_ptr_null_check
mov %r9, %r1
stw [%r10-4], 0
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, out
ldxdw %r1, [%r9+8]
add %r0, %r1
jeq %r0, 0, out # ERROR E024
mov %r0, 1
exit
out:
mov %r0, 0
exit

-- bad_stack_ptr_order_outside_frame
mov %r6, %r10
add %r6, -1024
mov %r7, %r10
jlt %r6, %r7, +1 # ERROR E024
mov %r0, 0
mov %r0, 0
exit

-- ok_ptr_loop_inside_value
stw [%r10-4], 0
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, out
mov %r6, %r0
mov %r7, %r0
add %r7, 48
mov %r0, 0
loop:
jge %r6, %r7, done
ldxw %r1, [%r6+0]
add %r0, %r1
add %r6, 4
ja loop
done:
and %r0, 255
exit
out:
mov %r0, 0
exit

-- ok_ptr_end_compare_just_past_end
stw [%r10-4], 0
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, out
mov %r7, %r0
add %r7, 48
jne %r7, 0, +1
mov %r0, 0
mov %r0, 1
exit
out:
mov %r0, 0
exit

# Ringbuf records: a pointer that is one record on one path and another
# on the other holds neither after the join.
-- bad_ringbuf_record_swapped_at_join
mov %r9, %r1
lddw %r1, map(2)
mov %r2, 16
mov %r3, 0
call 131
mov %r6, %r0
jne %r6, 0, +2
mov %r0, 0
exit
lddw %r1, map(2)
mov %r2, 16
mov %r3, 0
call 131
mov %r7, %r0
jne %r7, 0, ok7
mov %r1, %r6
mov %r2, 0
call 133
mov %r0, 0
exit
ok7:
ldxw %r1, [%r9+0]
mov %r8, %r6
jeq %r1, 0, join
mov %r8, %r7
join:
mov %r1, %r6
mov %r2, 0
call 132
mov %r1, %r7
mov %r2, 0
call 132
stdw [%r8+0], 1 # ERROR E035
mov %r0, 0
exit

-- bad_ringbuf_swapped_record_submitted
mov %r9, %r1
lddw %r1, map(2)
mov %r2, 16
mov %r3, 0
call 131
mov %r6, %r0
jne %r6, 0, +2
mov %r0, 0
exit
lddw %r1, map(2)
mov %r2, 16
mov %r3, 0
call 131
mov %r7, %r0
jne %r7, 0, ok7
mov %r1, %r6
mov %r2, 0
call 133
mov %r0, 0
exit
ok7:
ldxw %r1, [%r9+0]
mov %r8, %r6
jeq %r1, 0, join
mov %r8, %r7
join:
mov %r1, %r6
mov %r2, 0
call 132
mov %r1, %r8 # ERROR E035
mov %r2, 0
call 132
mov %r0, 0
exit

-- bad_ringbuf_spilled_pointer_after_submit
lddw %r1, map(2)
mov %r2, 16
mov %r3, 0
call 131
jne %r0, 0, +2
mov %r0, 0
exit
stxdw [%r10-8], %r0
mov %r1, %r0
mov %r2, 0
call 132
ldxw %r0, [%r10-8] # ERROR E035
and %r0, 1
exit

-- bad_ringbuf_leak_names_reservation
lddw %r1, map(2)
mov %r2, 16
mov %r3, 0
call 131
jeq %r0, 0, +1
stdw [%r0+0], 1
mov %r0, 0
exit # ERROR E030

# Map access flags: BPF_F_RDONLY_PROG maps are read-only to programs,
# BPF_F_WRONLY_PROG maps write-only.
-- bad_store_into_rdonly_prog_map
stw [%r10-4], 0
lddw %r1, map(4)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, +1
stdw [%r0+0], 1 # ERROR E029
mov %r0, 0
exit

-- bad_atomic_on_rdonly_prog_map
stw [%r10-4], 0
lddw %r1, map(4)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, +2
mov %r1, 1
lock add [%r0+0], %r1 # ERROR E029
mov %r0, 0
exit

-- bad_update_rdonly_prog_map
stw [%r10-4], 0
stdw [%r10-24], 0
stdw [%r10-16], 0
lddw %r1, map(4)
mov %r2, %r10
add %r2, -4
mov %r3, %r10
add %r3, -24
mov %r4, 0
call 2 # ERROR E029
mov %r0, 0
exit

-- bad_delete_rdonly_prog_hash
stdw [%r10-8], 0
lddw %r1, map(6)
mov %r2, %r10
add %r2, -8
call 3 # ERROR E029
mov %r0, 0
exit

-- ok_read_rdonly_prog_map
stw [%r10-4], 0
lddw %r1, map(4)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, +3
ldxdw %r0, [%r0+8]
and %r0, 255
exit
mov %r0, 0
exit

-- bad_read_wronly_prog_map
stw [%r10-4], 0
lddw %r1, map(5)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, +3
ldxdw %r0, [%r0+8] # ERROR E034
and %r0, 255
exit
mov %r0, 0
exit

-- bad_wronly_prog_value_as_key
stw [%r10-4], 0
lddw %r1, map(5)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, out
mov %r2, %r0
lddw %r1, map(0)
call 1 # ERROR E034
out:
mov %r0, 0
exit

-- bad_atomic_fetch_wronly_prog_map
stw [%r10-4], 0
lddw %r1, map(5)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, +2
mov %r1, 1
lock add [%r0+0], %r1 # ERROR E034
mov %r0, 0
exit

-- ok_write_wronly_prog_map
stw [%r10-4], 0
lddw %r1, map(5)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, +1
stdw [%r0+8], 7
mov %r0, 0
exit

# bpf_printk formats as many registers as its format has conversions.
-- ok_printk_format_in_rodata_two_values
lddw %r1, map_value(3)+0
mov %r2, 6
mov %r3, 1
mov %r4, 2
call 6
mov %r0, 0
exit

-- bad_printk_format_in_rodata_uninit_value
lddw %r1, map_value(3)+0
mov %r2, 6
mov %r3, 1
call 6 # ERROR E010
mov %r0, 0
exit

-- bad_printk_format_on_stack_uninit_values
ldxdw %r3, [%r1+8]
stxdw [%r10-8], %r3
mov %r1, %r10
add %r1, -8
mov %r2, 8
mov %r3, 1
call 6 # ERROR E010
mov %r0, 0
exit

-- ok_printk_format_on_stack_all_values
ldxdw %r3, [%r1+8]
stxdw [%r10-8], %r3
mov %r1, %r10
add %r1, -8
mov %r2, 8
mov %r3, 1
mov %r4, 1
mov %r5, 1
call 6
mov %r0, 0
exit

# A format built byte by byte on the stack is read as constant bytes;
# one byte not known makes the whole format unknown.
-- ok_printk_format_on_stack_bytes
stb [%r10-8], 0x25
stb [%r10-7], 0x64
stb [%r10-6], 0
mov %r1, %r10
add %r1, -8
mov %r2, 3
mov %r3, 1
call 6
mov %r0, 0
exit

-- ok_printk_format_on_stack_halfwords
mov %r3, 0x6425
stxh [%r10-8], %r3
sth [%r10-6], 0
mov %r1, %r10
add %r1, -8
mov %r2, 3
mov %r3, 1
call 6
mov %r0, 0
exit

-- bad_printk_format_on_stack_bytes_two_values
stb [%r10-8], 0x25
stb [%r10-7], 0x64
stb [%r10-6], 0x25
stb [%r10-5], 0x64
stb [%r10-4], 0
mov %r1, %r10
add %r1, -8
mov %r2, 5
mov %r3, 1
call 6 # ERROR E010
mov %r0, 0
exit

-- bad_printk_format_on_stack_byte_unknown
ldxw %r4, [%r1+0]
stb [%r10-8], 0x25
stxb [%r10-7], %r4
stb [%r10-6], 0
mov %r1, %r10
add %r1, -8
mov %r2, 3
mov %r3, 1
call 6 # ERROR E010
mov %r0, 0
exit

-- bad_printk_format_on_stack_byte_overwritten
stw [%r10-8], 0x6425
ldxw %r4, [%r1+0]
stxb [%r10-8], %r4
mov %r1, %r10
add %r1, -8
mov %r2, 3
mov %r3, 1
call 6 # ERROR E010
mov %r0, 0
exit

# A byte stored into a slot of known value replaces that byte only.
-- ok_stack_byte_store_keeps_rest
mov %r9, %r1
stdw [%r10-16], 0
stb [%r10-16], 5
stw [%r10-4], 0
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, out
ldxdw %r2, [%r10-16]
add %r0, %r2
ldxb %r0, [%r0+0]
out:
mov %r0, 0
exit

-- bad_stack_byte_store_forgets_constant
mov %r9, %r1
stdw [%r10-16], 0
ldxw %r3, [%r9+0]
stxb [%r10-15], %r3
stw [%r10-4], 0
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, out
ldxdw %r2, [%r10-16]
add %r0, %r2
ldxb %r0, [%r0+0] # ERROR E014
out:
mov %r0, 0
exit

-- bad_stack_byte_read_of_unknown_byte
mov %r9, %r1
stdw [%r10-16], 0
ldxw %r3, [%r9+0]
stxh [%r10-14], %r3
stw [%r10-4], 0
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, out
ldxb %r2, [%r10-13]
add %r0, %r2
ldxb %r0, [%r0+0] # ERROR E014
out:
mov %r0, 0
exit

# (unsigned)(i - lo) < n: clang compares a 32-bit copy of i - lo and
# indexes with i. The copy bounds i only where i fits in 32 bits and the
# bounds do not wrap around 2^32.
-- ok_range_check_sub32
mov %r9, %r1
stw [%r10-4], 0
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, out
ldxw %r2, [%r9+0]
mov32 %r3, %r2
add32 %r3, -2
jgt32 %r3, 5, out
add %r0, %r2
ldxb %r0, [%r0+40]
out:
mov %r0, 0
exit

-- ok_range_check_sub32_second_copy
mov %r9, %r1
stw [%r10-4], 0
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, out
ldxdw %r2, [%r9+8]
mov32 %r4, %r2
mov32 %r3, %r2
sub32 %r3, 2
jgt32 %r3, 5, out
add %r0, %r4
ldxb %r0, [%r0+40]
out:
mov %r0, 0
exit

-- ok_range_check_copy_then_offset
mov %r9, %r1
stw [%r10-4], 0
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, out
ldxw %r2, [%r9+0]
mov32 %r3, %r2
add32 %r3, -2
mov32 %r4, %r2
add32 %r4, 10
jgt %r2, 7, out
jlt %r2, 2, out
add %r0, %r3
ldxb %r0, [%r0+42]
out:
mov %r0, 0
exit

-- bad_range_check_sub32_one_too_many
mov %r9, %r1
stw [%r10-4], 0
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, out
ldxw %r2, [%r9+0]
mov32 %r3, %r2
add32 %r3, -2
jgt32 %r3, 6, out
add %r0, %r2
ldxb %r0, [%r0+40] # ERROR E014
out:
mov %r0, 0
exit

-- bad_range_check_add32_wraps
mov %r9, %r1
stw [%r10-4], 0
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, out
ldxw %r2, [%r9+0]
mov32 %r3, %r2
add32 %r3, 3
jgt32 %r3, 7, out
add %r0, %r2
ldxb %r0, [%r0+0] # ERROR E014
out:
mov %r0, 0
exit

-- bad_range_check_64bit_index
mov %r9, %r1
stw [%r10-4], 0
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, out
ldxdw %r2, [%r9+8]
mov32 %r3, %r2
add32 %r3, -2
jgt32 %r3, 5, out
add %r0, %r2
ldxb %r0, [%r0+0] # ERROR E014
out:
mov %r0, 0
exit

-- bad_range_check_index_changed
mov %r9, %r1
stw [%r10-4], 0
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, out
ldxw %r2, [%r9+0]
mov32 %r3, %r2
add32 %r3, -2
add %r2, 1
jgt32 %r3, 5, out
add %r0, %r2
ldxb %r0, [%r0+40] # ERROR E014
out:
mov %r0, 0
exit

-- bad_range_check_multiplied_copy
mov %r9, %r1
stw [%r10-4], 0
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, out
ldxw %r2, [%r9+0]
mov32 %r3, %r2
mul32 %r3, 2
add32 %r3, -2
jgt32 %r3, 5, out
add %r0, %r2
ldxb %r0, [%r0+40] # ERROR E014
out:
mov %r0, 0
exit

-- bad_range_check_two_offsets_joined
mov %r9, %r1
stw [%r10-4], 0
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, out
ldxw %r2, [%r9+0]
ldxw %r4, [%r9+4]
mov32 %r3, %r2
jeq %r4, 0, +2
add32 %r3, -2
ja +1
add32 %r3, 30
jgt32 %r3, 5, out
add %r0, %r2
ldxb %r0, [%r0+40] # ERROR E014
out:
mov %r0, 0
exit

# A state with more linked copies than a fixed table could hold: the
# copies of fp-8 and fp-16 are one value on the first path explored and
# two on the second; bounding one copy bounds the other only on the first.
-- bad_prune_forgets_links
mov %r9, %r1
stw [%r10-4], 0
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, out
mov %r6, %r0
ldxdw %r1, [%r9+8]
mov %r2, %r1
stxdw [%r10-16], %r1
stxdw [%r10-24], %r2
ldxdw %r1, [%r9+8]
mov %r2, %r1
stxdw [%r10-32], %r1
stxdw [%r10-40], %r2
ldxdw %r1, [%r9+8]
mov %r2, %r1
stxdw [%r10-48], %r1
stxdw [%r10-56], %r2
ldxdw %r1, [%r9+8]
mov %r2, %r1
stxdw [%r10-64], %r1
stxdw [%r10-72], %r2
ldxdw %r1, [%r9+8]
mov %r2, %r1
stxdw [%r10-80], %r1
stxdw [%r10-88], %r2
ldxdw %r1, [%r9+8]
mov %r2, %r1
stxdw [%r10-96], %r1
stxdw [%r10-104], %r2
ldxdw %r1, [%r9+8]
mov %r2, %r1
stxdw [%r10-112], %r1
stxdw [%r10-120], %r2
ldxdw %r1, [%r9+8]
mov %r2, %r1
stxdw [%r10-128], %r1
stxdw [%r10-136], %r2
ldxdw %r1, [%r9+8]
mov %r2, %r1
stxdw [%r10-144], %r1
stxdw [%r10-152], %r2
ldxdw %r1, [%r9+8]
mov %r2, %r1
stxdw [%r10-160], %r1
stxdw [%r10-168], %r2
ldxdw %r1, [%r9+8]
mov %r2, %r1
stxdw [%r10-176], %r1
stxdw [%r10-184], %r2
ldxdw %r1, [%r9+8]
mov %r2, %r1
stxdw [%r10-192], %r1
stxdw [%r10-200], %r2
ldxdw %r1, [%r9+8]
mov %r2, %r1
stxdw [%r10-208], %r1
stxdw [%r10-216], %r2
ldxdw %r1, [%r9+8]
mov %r2, %r1
stxdw [%r10-224], %r1
stxdw [%r10-232], %r2
ldxdw %r1, [%r9+8]
mov %r2, %r1
stxdw [%r10-240], %r1
stxdw [%r10-248], %r2
ldxdw %r1, [%r9+8]
mov %r2, %r1
stxdw [%r10-256], %r1
stxdw [%r10-264], %r2
ldxdw %r1, [%r9+8]
mov %r2, %r1
stxdw [%r10-272], %r1
stxdw [%r10-280], %r2
ldxdw %r1, [%r9+8]
mov %r2, %r1
stxdw [%r10-288], %r1
stxdw [%r10-296], %r2
ldxdw %r1, [%r9+8]
mov %r2, %r1
stxdw [%r10-304], %r1
stxdw [%r10-312], %r2
ldxdw %r1, [%r9+8]
mov %r2, %r1
stxdw [%r10-320], %r1
stxdw [%r10-328], %r2
ldxdw %r1, [%r9+8]
mov %r2, %r1
stxdw [%r10-336], %r1
stxdw [%r10-344], %r2
mov %r1, 0
mov %r2, 0
ldxw %r1, [%r9+0]
jeq %r1, 0, keep
ldxdw %r3, [%r9+8]
stxdw [%r10-24], %r3
keep:
ldxdw %r4, [%r10-16]
jgt %r4, 40, out
ldxdw %r5, [%r10-24]
add %r6, %r5
ldxb %r0, [%r6+0] # ERROR E014
exit
out:
mov %r0, 0
exit

# 32-bit comparisons refine the 64-bit value only where it is the
# sign- or zero-extension of its low half.
-- bad_jmp32_checks_do_not_bound_64bit_value
ldxdw %r2, [%r1+8]
jslt32 %r2, 0, out
jsgt32 %r2, 7, out
lddw %r3, map_value(3)+0
add %r3, %r2
ldxb %r0, [%r3+0] # ERROR E014
exit
out:
mov %r0, 0
exit

-- ok_jmp32_signed_checks_on_sign_extended_value
ldxw %r2, [%r1+0]
lsh %r2, 32
arsh %r2, 32
jslt32 %r2, 0, out
jsgt32 %r2, 7, out
lddw %r3, map_value(3)+0
add %r3, %r2
ldxb %r0, [%r3+0]
exit
out:
mov %r0, 0
exit

-- ok_jmp32_signed_checks_on_zero_extended_value
ldxw %r2, [%r1+0]
jslt32 %r2, 0, out
jsgt32 %r2, 7, out
lddw %r3, map_value(3)+0
add %r3, %r2
ldxb %r0, [%r3+0]
exit
out:
mov %r0, 0
exit

-- ok_jmp32_unsigned_check_on_sign_extended_value
ldxw %r2, [%r1+0]
lsh %r2, 32
arsh %r2, 32
jgt32 %r2, 7, out
lddw %r3, map_value(3)+0
add %r3, %r2
ldxb %r0, [%r3+0]
exit
out:
mov %r0, 0
exit

-- bad_jmp32_unsigned_check_lets_negative_through
ldxw %r2, [%r1+0]
lsh %r2, 32
arsh %r2, 32
jgt32 %r2, 0xfffffff0, out
jsgt %r2, 7, out
lddw %r3, map_value(3)+0
add %r3, %r2
ldxb %r0, [%r3+0] # ERROR E014
exit
out:
mov %r0, 0
exit

-- bad_jmp32_signed_check_on_zero_extended_lets_high_through
ldxw %r2, [%r1+0]
jsgt32 %r2, 7, out
lddw %r3, map_value(3)+0
add %r3, %r2
ldxb %r0, [%r3+0] # ERROR E014
exit
out:
mov %r0, 0
exit

-- ok_printk_format_constant_on_stack
stdw [%r10-8], 0xa6425
mov %r1, %r10
add %r1, -8
mov %r2, 4
mov %r3, 42
call 6
mov %r0, 0
exit

-- bad_printk_format_constant_on_stack_two_values
stdw [%r10-8], 0x64256425
stw [%r10-4], 0
mov %r1, %r10
add %r1, -8
mov %r2, 8
mov %r3, 42
call 6 # ERROR E010
mov %r0, 0
exit

# Rank uniformity through memory and pruning (tuner hook: reg_buff at 32
# is [local], n_ranks at 36 and coll_type at 24 [uniform], n_channels at
# 156 is a decision).
-- bad_local_through_plain_stack_bytes
# hook: tuner
ldxw %r2, [%r1+32]
stxb [%r10-8], %r2
ldxb %r3, [%r10-8]
stxw [%r1+156], %r3 # ERROR E033
mov %r0, 0
exit

-- bad_local_through_4_byte_spill
# hook: tuner
ldxw %r2, [%r1+32]
stxw [%r10-8], %r2
stw [%r10-4], 0
ldxw %r3, [%r10-8]
stxw [%r1+156], %r3 # ERROR E033
mov %r0, 0
exit

-- ok_uniform_half_beside_local_half
# hook: tuner
ldxw %r2, [%r1+32]
ldxw %r4, [%r1+36]
stxw [%r10-8], %r4
stxw [%r10-4], %r2
ldxw %r3, [%r10-8]
mov %r0, 0
exit

-- bad_pruning_respects_labels
# hook: tuner
ldxw %r2, [%r1+36]
ldxw %r3, [%r1+32]
ldxw %r4, [%r1+24]
mov %r5, %r2
jeq %r4, 0, join
mov %r5, %r3
join:
and %r5, 7
stxw [%r1+156], %r5 # ERROR E033
mov %r0, 0
exit

-- bad_local_branch_then_constant_written
# hook: tuner
ldxw %r3, [%r1+32]
mov %r5, 2
jeq %r3, 0, join
mov %r5, 4
join:
stxw [%r1+156], %r5 # ERROR E033
mov %r0, 0
exit

-- ok_local_branch_ends_before_decision
# hook: tuner
ldxw %r3, [%r1+32]
mov %r6, 0
jeq %r3, 0, join
mov %r6, 1
join:
stw [%r1+156], 4
mov %r0, 0
exit

-- bad_misaligned_atomic_map_value
stw [%r10-4], 0
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, +2
mov %r1, 1
lock add [%r0+4], %r1 # ERROR E036
mov %r0, 0
exit

-- bad_misaligned_atomic_stack
stdw [%r10-16], 0
mov %r1, 1
lock add32 [%r10-10], %r1 # ERROR E036
mov %r0, 0
exit

-- ok_aligned_atomic_32_at_4
stw [%r10-4], 0
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, +2
mov %r1, 1
lock add32 [%r0+4], %r1
mov %r0, 0
exit
