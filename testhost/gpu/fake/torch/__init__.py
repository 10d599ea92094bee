# SPDX-License-Identifier: MIT
"""A fake torch for testhost/gpu/dry-run.sh: just what testhost/gpu/p2p_check.py uses, with tensors
as Python lists and torch.distributed calling the fake NCCL (testhost/gpu/fake/fake_nccl.c, through
ctypes; its path in FAKE_NCCL_LIB), which drives the real libncclbpf.so as NCCL would."""
from . import cuda  # noqa: F401

__version__ = "0.0+fake"
int32, int64, float32 = "int32", "int64", "float32"


class device:
    def __init__(self, s):
        self.s = s


class Tensor:
    def __init__(self, data, nbytes_per=4):
        self.data = list(data)
        self.esize = nbytes_per

    def fill_(self, v):
        self.data = [v] * len(self.data)
        return self

    def zero_(self):
        return self.fill_(0)

    def __ne__(self, v):
        return Tensor([x != v for x in self.data])

    def __eq__(self, v):
        return Tensor([x == v for x in self.data])

    def sum(self):
        return Tensor([sum(self.data)])

    def all(self):
        return Tensor([all(self.data)])

    def item(self):
        return self.data[0]

    def __iadd__(self, o):
        self.data = [self.data[0] + o.data[0]]
        return self


def _n(shape):
    if isinstance(shape, int):
        return shape
    return shape[0] if shape else 1


def empty(shape, dtype=None, device=None):
    return Tensor([0] * _n(shape))


def zeros(shape, dtype=None, device=None):
    return Tensor([0] * _n(shape))


def full(shape, v, dtype=None, device=None):
    return Tensor([v] * _n(shape))


def empty_like(t):
    return Tensor([0] * len(t.data))


def zeros_like(t):
    return Tensor([0] * len(t.data))


class version:
    cuda = "fake"
