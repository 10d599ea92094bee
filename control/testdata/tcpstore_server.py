# A PyTorch TCPStore server for the control package's tests: prints its
# port, then serves until stdin closes.
import datetime
import sys

import torch.distributed as dist

store = dist.TCPStore("127.0.0.1", 0, None, True, datetime.timedelta(seconds=60), wait_for_workers=False)
store.set("python-set", "from python")
print(store.port, flush=True)
sys.stdin.read()
