# The compute loop of compute.s on a state that carries over from run to
# run: the xorshift state is read from the context's first 8 bytes and
# written back, so the branch outcomes never repeat and no branch predictor
# learns them. xorshift.c is the same loop in C.
ldxdw %r3, [%r1+0]
mov %r0, 0
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
stxdw [%r1+0], %r3
exit
