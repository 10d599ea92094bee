# SPDX-License-Identifier: MIT
"""p2p_check.py: PyTorch (NCCL backend) send/recv to self on one GPU, for scripts/gpu-check.sh.

With one GPU, collectives on a 1-rank communicator are plain copies (no tuner call, no collective
profiler event); send/recv to self does produce P2p profiler events. This program:

  check  runs --groups-a groups of (isend + irecv to self) on the default process group and
         --groups-b on a second group (a second NCCL communicator: a second tuner/profiler init
         and finalize), every group with its own fill value, and checks every received tensor
         (mismatches are summed on the GPU without a sync per group, then read once). Halfway
         through the default group's loop, --mid-cmd (with {pid} replaced by this process id)
         runs in a background thread while the loop goes on (a reload through the control
         socket; groups_during_mid says how many groups were issued while it ran; the number of
         groups stays fixed, so counts stay exact); before the groups are destroyed --end-cmd
         runs (a map dump). Both commands' output is kept in the JSON summary.
  bench  times --blocks blocks of --iters groups of --bytes each (pipelined: one synchronize per
         block; --sync: a synchronize after every group) and prints per-group microseconds.

The last line printed is "P2P_CHECK {json}"; exit status 0 only when every tensor was right.
"""
import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import threading
import time

import torch
import torch.distributed as dist


def run_cmd(cmd, pid, out, key):
    """Runs cmd ({pid} replaced) and records its status and output under out[key]."""
    argv = [a.replace("{pid}", str(pid)) for a in shlex.split(cmd)]
    t0 = time.perf_counter()
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=60)
        out[key] = {"argv": argv, "rc": p.returncode, "stdout": p.stdout, "stderr": p.stderr,
                    "seconds": round(time.perf_counter() - t0, 3)}
    except Exception as e:  # a missing binary or a timeout is a result, not a crash
        out[key] = {"argv": argv, "rc": None, "error": repr(e), "seconds": round(time.perf_counter() - t0, 3)}


def p2p_group(send, recv, group):
    reqs = dist.batch_isend_irecv([dist.P2POp(dist.isend, send, 0, group=group),
                                   dist.P2POp(dist.irecv, recv, 0, group=group)])
    for q in reqs:
        q.wait()


def check_loop(n, nelem, group, bad, mid=None, during=None):
    """n groups, each with a distinct fill value; mismatching elements are added to bad (on GPU).
    mid() is called before group n // 2; during() after every group (it counts overlap)."""
    send = torch.empty(nelem, dtype=torch.int32, device="cuda")
    recv = torch.empty_like(send)
    for i in range(n):
        if mid is not None and i == n // 2:
            mid()
        send.fill_(i + 1)
        recv.fill_(-1)
        p2p_group(send, recv, group)
        bad += (recv != i + 1).sum()
        if during is not None:
            during()
    return n


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["check", "bench"])
    ap.add_argument("--groups-a", type=int, default=1000)
    ap.add_argument("--groups-b", type=int, default=500)
    ap.add_argument("--bytes", type=int, default=4096)
    ap.add_argument("--mid-cmd", default="")
    ap.add_argument("--end-cmd", default="")
    ap.add_argument("--iters", type=int, default=1000)
    ap.add_argument("--blocks", type=int, default=7)
    ap.add_argument("--warmup", type=int, default=200)
    ap.add_argument("--sync", action="store_true")
    ap.add_argument("--label", default="")
    a = ap.parse_args()

    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", str(29500 + os.getpid() % 1000))
    dev = torch.device("cuda:0")
    torch.cuda.set_device(dev)
    dist.init_process_group("nccl", rank=0, world_size=1, device_id=dev)
    nelem = max(1, a.bytes // 4)
    res = {"mode": a.mode, "label": a.label, "pid": os.getpid(), "torch": torch.__version__,
           "nccl": ".".join(map(str, torch.cuda.nccl.version())), "bytes": nelem * 4}
    ok = True
    if a.mode == "check":
        bad = torch.zeros((), dtype=torch.int64, device="cuda")
        mid_thread = None
        overlap = 0

        def mid():
            nonlocal mid_thread
            if a.mid_cmd:
                mid_thread = threading.Thread(target=run_cmd, args=(a.mid_cmd, os.getpid(), res, "mid"))
                mid_thread.start()

        def during():
            nonlocal overlap
            if mid_thread is not None and mid_thread.is_alive():
                overlap += 1

        done_a = check_loop(a.groups_a, nelem, None, bad, mid, during)
        if mid_thread is not None:
            mid_thread.join()
            res["groups_during_mid"] = overlap  # groups issued while the mid command ran
        gb = dist.new_group([0])  # a second communicator
        done_b = check_loop(a.groups_b, nelem, gb, bad)
        # one collective too: on 1 rank it is a copy (no tuner call), its result must still be right
        x = torch.full((nelem,), 3.0, device="cuda")
        dist.all_reduce(x)
        torch.cuda.synchronize()
        nbad = int(bad.item())
        allreduce_ok = bool((x == 3.0).all().item())
        if a.end_cmd:
            run_cmd(a.end_cmd, os.getpid(), res, "end")
        dist.destroy_process_group(gb)
        res.update(comms=2, groups_a=done_a, groups_b=done_b, sends=done_a + done_b, recvs=done_a + done_b,
                   bad_elements=nbad, allreduce_ok=allreduce_ok)
        ok = nbad == 0 and allreduce_ok
    else:
        send = torch.full((nelem,), 7, dtype=torch.int32, device="cuda")
        recv = torch.zeros_like(send)
        for _ in range(a.warmup):
            p2p_group(send, recv, None)
        torch.cuda.synchronize()
        per = []
        for _ in range(a.blocks):
            recv.zero_()
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            for _ in range(a.iters):
                p2p_group(send, recv, None)
                if a.sync:
                    torch.cuda.synchronize()
            torch.cuda.synchronize()
            per.append((time.perf_counter() - t0) / a.iters * 1e6)
            ok = ok and bool((recv == 7).all().item())
        res.update(iters=a.iters, blocks=a.blocks, sync=a.sync, us_per_group=[round(x, 3) for x in per],
                   median_us=round(statistics.median(per), 3), results_ok=ok)
    dist.destroy_process_group()
    res["ok"] = ok
    print("P2P_CHECK " + json.dumps(res), flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
