# SPDX-License-Identifier: MIT
"""torch.distributed of the fake torch: a 1-rank world whose groups are fake-NCCL communicators
(testhost/gpu/fake/fake_nccl.c via ctypes, FAKE_NCCL_LIB); batch_isend_irecv runs one NCCL group of
ncclSend + ncclRecv to self, so the real plugin sees P2p events, init and finalize."""
import ctypes
import os

isend, irecv = "isend", "irecv"
_lib = ctypes.CDLL(os.environ["FAKE_NCCL_LIB"])
_default = None


class _UniqueId(ctypes.Structure):
    _fields_ = [("internal", ctypes.c_char * 128)]


def _check(rc, what):
    if rc != 0:
        raise RuntimeError(f"fake NCCL: {what} returned {rc}")


def _comm():
    uid = _UniqueId()
    _check(_lib.ncclGetUniqueId(ctypes.byref(uid)), "ncclGetUniqueId")
    c = ctypes.c_void_p()
    _check(_lib.ncclCommInitRank(ctypes.byref(c), 1, uid, 0), "ncclCommInitRank")
    return c


class P2POp:
    def __init__(self, op, t, peer, group=None):
        self.op, self.t, self.peer, self.group = op, t, peer, group


class _Work:
    def wait(self):
        return True


def init_process_group(backend, rank=0, world_size=1, device_id=None):
    global _default
    if world_size != 1 or rank != 0:
        raise ValueError("the fake runs a 1-rank world only")
    _default = _comm()


def new_group(ranks):
    return _comm()


def destroy_process_group(group=None):
    global _default
    c = group if group is not None else _default
    _check(_lib.ncclCommFinalize(c), "ncclCommFinalize")
    _check(_lib.ncclCommDestroy(c), "ncclCommDestroy")
    if group is None:
        _default = None


def batch_isend_irecv(ops):
    comm = ops[0].group if ops[0].group is not None else _default
    send = [o for o in ops if o.op == isend][0].t
    recv = [o for o in ops if o.op == irecv][0].t
    n = len(send.data) * 4
    sbuf, rbuf = ctypes.create_string_buffer(n), ctypes.create_string_buffer(n)
    _check(_lib.ncclGroupStart(), "ncclGroupStart")
    _check(_lib.ncclSend(sbuf, ctypes.c_size_t(n), 0, 0, comm, None), "ncclSend")
    _check(_lib.ncclRecv(rbuf, ctypes.c_size_t(n), 0, 0, comm, None), "ncclRecv")
    _check(_lib.ncclGroupEnd(), "ncclGroupEnd")
    recv.data = list(send.data)
    if os.environ.get("FAKE_CORRUPT_PY") == "1":
        os.environ.pop("FAKE_CORRUPT_PY")
        recv.data[0] += 1
    return [_Work(), _Work()]


def all_reduce(t, group=None):
    pass  # 1 rank: a copy; NCCL calls no plugin for it
