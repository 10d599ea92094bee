# Red team: atomic operations. An atomic must be naturally aligned (x86
# "lock" on a cache-line-crossing operand is a split lock: a bus lock
# that stalls every core, and SIGBUS where the kernel runs with
# split_lock_detect=fatal; Linux refuses misaligned atomics): refused with
# E036 misaligned-atomic. An atomic also reads: it needs
# initialized memory and a readable region.
# Maps: see c1_ptrdiff.s.

-- bad_misaligned_atomic_map_value
# 8 bytes at offset 12 of arr[1]: bytes 60..67 of the array, across a
# 64-byte line when the array is line-aligned
mov %r9, %r1
stw [%r10-4], 1
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, out
mov %r1, 1
lock add [%r0+12], %r1 # ERROR E036
out:
mov %r0, 0
exit

-- bad_misaligned_atomic_stack
stdw [%r10-16], 0
stdw [%r10-8], 0
mov %r1, 1
lock add [%r10-12], %r1 # ERROR E036
mov %r0, 0
exit

-- bad_misaligned_cmpxchg_record
lddw %r1, map(2)
mov %r2, 16
mov %r3, 0
call 131
jeq %r0, 0, out
stdw [%r0+0], 0
stdw [%r0+8], 0
mov %r6, %r0
mov %r0, 0
mov %r1, 1
lock cmpxchg [%r6+4], %r1 # ERROR E036
mov %r1, %r6
mov %r2, 0
call 132
out:
mov %r0, 0
exit

-- bad_misaligned_atomic_variable_offset
# offset 0..7: aligned only for 0
mov %r9, %r1
stw [%r10-4], 0
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, out
ldxw %r2, [%r9+0]
and %r2, 7
add %r0, %r2
mov %r1, 1
lock add [%r0+0], %r1 # ERROR E036
out:
mov %r0, 0
exit

-- bad_misaligned_atomic32_map_value
mov %r9, %r1
stw [%r10-4], 0
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, out
mov %r1, 1
lock xchg32 [%r0+2], %r1 # ERROR E036
out:
mov %r0, 0
exit

-- bad_atomic_on_uninit_stack
mov %r1, 1
lock fetch add [%r10-8], %r1 # ERROR E011
mov %r0, %r1
and %r0, 1
exit

-- bad_atomic_past_value_end
mov %r9, %r1
stw [%r10-4], 0
lddw %r1, map(4)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, out
mov %r1, 1
lock add32 [%r0+8], %r1 # ERROR E014
out:
mov %r0, 0
exit

-- bad_atomic_on_readonly_global
mov %r1, 1
lddw %r2, map_value(3)+0
lock add [%r2+0], %r1 # ERROR E029
mov %r0, 0
exit

-- bad_atomic_fetch_result_keeps_no_bound
# the old value of a map word is any number
mov %r9, %r1
stw [%r10-4], 0
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, out
mov %r8, %r0
stdw [%r8+0], 8
mov %r2, 0
lock fetch add [%r8+0], %r2
add %r8, %r2
ldxdw %r0, [%r8+0] # ERROR E014
and %r0, 1
exit
out:
mov %r0, 0
exit

-- ok_aligned_atomics
mov %r9, %r1
stw [%r10-4], 0
lddw %r1, map(0)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, out
mov %r1, 1
lock add [%r0+8], %r1
lock add32 [%r0+20], %r1
lock fetch or [%r0+40], %r1
out:
mov %r0, 0
exit
