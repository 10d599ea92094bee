# SPDX-License-Identifier: MIT
"""torch.cuda of the fake torch (testhost/gpu/fake/torch)."""


class nccl:
    @staticmethod
    def version():
        return (0, 0, 0)


def set_device(d):
    pass


def synchronize():
    pass


def device_count():
    return 1
