# Structural checks. Programs are separated by "-- NAME" lines; a name
# starting with bad_ must be rejected at the instruction annotated with
# "ERROR Ennn", one starting with ok_ accepted. Directives in a program:
# "# hook: NAME" (default vtest), "# maxstack: N". Maps by index:
# 0 arr (array, key 4, value 48, 16 entries), 1 hash (hash, key 8, value 8),
# 2 rb (ringbuf), 3 ro (read-only global data, value 16, holding the
# format "%d %d"), 4 agreed (array, value 16, BPF_F_RDONLY_PROG), 5 wo
# (array, value 16, BPF_F_WRONLY_PROG), 6 rohash (hash, key 8, value 8,
# BPF_F_RDONLY_PROG).

-- bad_jump_past_end
mov %r0, 0
ja +5 # ERROR E003
exit

-- bad_jump_before_start
mov %r0, 0
jeq %r0, 0, -3 # ERROR E003
exit

-- bad_call_out_of_range
call local +20 # ERROR E003
mov %r0, 0
exit

-- bad_jump_into_lddw
mov %r0, 0
jeq %r1, 0, +1 # ERROR E004
lddw %r0, 0x100000000
and %r0, 1
exit

-- bad_goto_into_lddw
ja +2 # ERROR E004
mov %r0, 0
lddw %r0, 7
exit

-- bad_unreachable_after_exit
mov %r0, 0
exit
mov %r0, 1 # ERROR E006
exit

-- bad_unreachable_skipped
mov %r0, 0
ja +1
mov %r0, 1 # ERROR E006
exit

-- bad_unreachable_dead_function
mov %r0, 0
exit
mov %r0, 2 # ERROR E006
exit

-- bad_missing_exit
mov %r0, 0 # ERROR E005

-- bad_missing_exit_branch
mov %r0, 0
jeq %r1, 0, +1
exit
mov %r0, 1 # ERROR E005

-- bad_missing_exit_in_subprogram
call local sub
exit
sub:
mov %r0, 0 # ERROR E005

-- bad_jump_across_functions
call local sub
mov %r0, 0
exit
sub:
mov %r0, 0
ja -3 # ERROR E032
exit

-- bad_recursion
call local f
mov %r0, 0
exit
f:
call local f # ERROR E008
mov %r0, 0
exit

-- bad_mutual_recursion
call local f
exit
f:
call local g
exit
g:
call local f # ERROR E008
exit

-- bad_call_depth
call local f1
mov %r0, 0
exit
f1:
call local f2
exit
f2:
call local f3
exit
f3:
call local f4
exit
f4:
call local f5
exit
f5:
call local f6
exit
f6:
call local f7
exit
f7:
call local f8 # ERROR E008
exit
f8:
mov %r0, 0
exit

-- ok_call_depth_eight
call local f1
mov %r0, 0
exit
f1:
call local f2
exit
f2:
call local f3
exit
f3:
call local f4
exit
f4:
call local f5
exit
f5:
call local f6
exit
f6:
call local f7
exit
f7:
mov %r0, 0
exit

-- bad_stack_budget
# maxstack: 768
stdw [%r10-512], 0
call local f # ERROR E009
mov %r0, 0
exit
f:
stdw [%r10-512], 0
mov %r0, 0
exit

-- bad_stack_budget_small
# maxstack: 512
stdw [%r10-512], 0
call local f # ERROR E009
mov %r0, 0
exit
f:
stdw [%r10-8], 0
mov %r0, 0
exit

-- bad_too_long
# maxinsns: 4
mov %r0, 0
mov %r0, 1
mov %r0, 2
mov %r0, 3
mov %r0, 4 # ERROR E007
exit

-- ok_at_the_limit
# maxinsns: 4
mov %r0, 0
mov %r0, 1
mov %r0, 2
exit

-- bad_unknown_opcode
.insn 0x00000000000000ff # ERROR E001
mov %r0, 0
exit

-- bad_legacy_ldabs
ldabsw 12 # ERROR E001
mov %r0, 0
exit

-- bad_callx
mov %r2, 1
call %r2 # ERROR E001
mov %r0, 0
exit

-- bad_reserved_field
.insn 0x00000000001000b7 # ERROR E001
exit

-- bad_lddw_at_end
mov %r0, 0
exit
.insn 0x0000000000000018 # ERROR E001

-- bad_register_11
.insn 0x00000000000000b7
.insn 0x000000000000b0bf # ERROR E002
exit

-- bad_write_r10
mov %r10, 0 # ERROR E002
mov %r0, 0
exit

-- bad_load_into_r10
ldxdw %r10, [%r1+8] # ERROR E002
mov %r0, 0
exit

-- bad_map_index
lddw %r1, map(9) # ERROR E031
mov %r0, 0
exit

-- bad_map_value_of_hash
lddw %r1, map_value(1)+0 # ERROR E031
mov %r0, 0
exit

-- bad_exit_only
exit # ERROR E010

-- bad_uninit_r0
mov %r1, 1
exit # ERROR E010

-- bad_uninit_src
mov %r0, %r3 # ERROR E010
exit

-- bad_uninit_after_call
mov %r1, 5
call 5
mov %r0, %r1 # ERROR E010
exit

-- bad_uninit_jump_operand
jgt %r4, 3, +1 # ERROR E010
mov %r0, 0
exit

-- bad_uninit_store
stxdw [%r10-8], %r6 # ERROR E010
mov %r0, 0
exit

-- bad_uninit_after_subprogram
mov %r2, 3
call local f
mov %r0, %r2 # ERROR E010
exit
f:
mov %r0, 0
exit

# A function that returns nothing (C void) leaves r0 unset: only the
# program's own exit has a return value, and the caller may not read r0.
-- ok_void_subprogram
mov %r6, 3
call local f
mov %r0, %r6
exit
f:
mov %r1, 1
exit

-- ok_void_subprogram_nested
call local f
mov %r0, 0
exit
f:
call local g
exit
g:
exit

-- bad_void_subprogram_result_returned
call local f
exit # ERROR E010
f:
mov %r1, 1
exit

-- bad_void_subprogram_result_read
mov %r0, 7
call local f
mov %r6, %r0 # ERROR E010
mov %r0, 0
exit
f:
exit

-- bad_subprogram_result_set_on_one_path
ldxw %r1, [%r1+0]
call local f
exit # ERROR E010
f:
jeq %r1, 0, +1
mov %r0, 1
exit

-- bad_void_subprogram_result_passed_through
call local f
exit # ERROR E010
f:
call local g
exit
g:
exit

-- ok_callee_saved
mov %r6, 3
call local f
mov %r0, %r6
exit
f:
mov %r6, 100
mov %r0, 0
exit
