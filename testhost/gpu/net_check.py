# SPDX-License-Identifier: MIT
"""net_check.py: PyTorch (NCCL backend) all-reduce and send/recv over N GPUs of one host, for
testhost/gpu/net-check.sh (ncclbpf's net wrapper under real NCCL).

  --nranks N   processes (one GPU each; N=1 on a one-GPU machine: NCCL still loads and initializes
               the net plugins, queries their devices and properties, and picks one)
  --iters K    all-reduces of --elems float32 each (every rank adds rank+1+i: the sum is known) and,
               with N >= 2, a ring of send/recv per iteration, every result checked
  --end-cmd    run by rank 0 before the process group is destroyed ({pid} = its pid), e.g. a map dump

The last line printed by rank 0 is "NET_CHECK {json}"; exit status 0 only when every result was right.
"""
import argparse
import json
import os
import shlex
import subprocess
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def worker(rank, args, q):
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", str(args.port))
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", rank=rank, world_size=args.nranks)
    n = args.nranks
    bad = 0
    x = torch.empty(args.elems, device="cuda")
    for i in range(args.iters):
        x.fill_(float(rank + 1 + i))
        dist.all_reduce(x)
        want = float(n * (n + 1) // 2 + n * i)
        bad += int((x != want).sum().item())
        if n >= 2:
            s = torch.full((args.elems,), float(rank * 1000 + i), device="cuda")
            r = torch.empty_like(s)
            ops = [dist.P2POp(dist.isend, s, (rank + 1) % n), dist.P2POp(dist.irecv, r, (rank - 1) % n)]
            for w in dist.batch_isend_irecv(ops):
                w.wait()
            bad += int((r != float(((rank - 1) % n) * 1000 + i)).sum().item())
    torch.cuda.synchronize()
    end = None
    if rank == 0 and args.end_cmd:
        argv = [a.replace("{pid}", str(os.getpid())) for a in shlex.split(args.end_cmd)]
        try:
            p = subprocess.run(argv, capture_output=True, text=True, timeout=60)
            end = {"rc": p.returncode, "stdout": p.stdout, "stderr": p.stderr}
        except Exception as e:  # a missing binary is a result, not a crash
            end = {"error": repr(e)}
    dist.barrier()
    dist.destroy_process_group()
    q.put({"rank": rank, "bad": bad, "end": end})


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--nranks", type=int, default=1)
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--elems", type=int, default=1 << 20)
    ap.add_argument("--port", type=int, default=29531)
    ap.add_argument("--end-cmd", default="")
    args = ap.parse_args()
    if torch.cuda.device_count() < args.nranks:
        print("NET_CHECK " + json.dumps({"ok": False, "error": f"{args.nranks} ranks, {torch.cuda.device_count()} GPUs"}))
        return 2
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    procs = [ctx.Process(target=worker, args=(r, args, q)) for r in range(args.nranks)]
    for p in procs:
        p.start()
    res = [q.get(timeout=600) for _ in procs]
    for p in procs:
        p.join()
    ok = all(p.exitcode == 0 for p in procs) and all(r["bad"] == 0 for r in res)
    end = next((r["end"] for r in res if r["end"] is not None), None)
    print("NET_CHECK " + json.dumps({"ok": ok, "nranks": args.nranks, "iters": args.iters,
                                     "bad": sum(r["bad"] for r in res), "end": end}))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
