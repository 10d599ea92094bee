# The compute loop: 1000 rounds of xorshift, multiply, compare and branch
# (the branch goes either way about half of the time). compute.c is the
# same loop in C.
mov %r0, 0
mov %r3, 0x12345
mov %r4, 1000
loop:
mov %r5, %r3
lsh %r5, 13
xor %r3, %r5
mov %r5, %r3
rsh %r5, 7
xor %r3, %r5
mov %r5, %r3
lsh %r5, 17
xor %r3, %r5
mul %r5, 0x3f
jgt %r5, %r3, skip
add %r0, %r5
skip:
add %r0, %r3
sub %r4, 1
jne %r4, 0, loop
exit
