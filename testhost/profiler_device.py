# SPDX-License-Identifier: MIT
# profiler_device.py: drive real NCCL (PyTorch's) on one GPU with the profiler shim loaded, either
# the shim with native summary programs (testhost/profiler_device.c):
#   NCCL_PROFILER_PLUGIN=/path/libprofiler-device.so python testhost/profiler_device.py
# or libncclbpf.so with an eBPF bundle (its bpf_printk lines appear in NCCL's INFO log):
#   NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,TUNING,PROFILE NCCL_PROFILER_PLUGIN=$PWD/build/libncclbpf.so \
#   NCCL_TUNER_PLUGIN=$PWD/build/libncclbpf.so NCCLBPF_POLICY=$PWD/testhost/profiler_device_policy.bpf.o \
#   python testhost/profiler_device.py
# With one GPU only p2p to self reaches the profiler (collectives on 1 rank are plain copies).
import os, sys, time
import torch
import torch.distributed as dist

os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
os.environ.setdefault("MASTER_PORT", "29512")
dist.init_process_group("nccl", rank=0, world_size=1, device_id=torch.device("cuda:0"))
print("torch", torch.__version__, "nccl", torch.cuda.nccl.version(), flush=True)
iters = int(sys.argv[1]) if len(sys.argv) > 1 else 200
for nbytes in (4096, 1 << 20, 64 << 20):
    t = torch.ones(nbytes // 4, device="cuda")
    r = torch.empty_like(t)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for i in range(iters):
        reqs = dist.batch_isend_irecv([dist.P2POp(dist.isend, t, 0), dist.P2POp(dist.irecv, r, 0)])
        for q in reqs:
            q.wait()
    torch.cuda.synchronize()
    dt = time.perf_counter() - t0
    print(f"{nbytes} B: {iters} send/recv groups, {dt / iters * 1e6:.1f} us each", flush=True)
dist.destroy_process_group()
