"""d2l's allreduce with one process per device over torch.distributed (gloo), on gpudev arrays.

Each process holds its device's gradient as a gpudev array and hands it to torch without a
copy through DLPack (CPU arrays); torch.distributed sums it across processes in place, so the
gpudev array holds the sum afterwards. An emulated GPU's memory is the emulation's, which torch
cannot import: there the gradient goes through one explicit ``.cpu()`` (counted by
``gd.trace()``) and back. On real GPUs, use the NCCL backend and ``torch.from_dlpack`` on the
GPU array directly.

    python examples/distributed/allreduce_torch.py            # 2 processes on the CPU
    GPUDEV_EMULATE_GPUS=2 python examples/distributed/allreduce_torch.py   # one emulated GPU each
"""

from __future__ import annotations

import os
import socket
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

import gpudev as gd

WORLD = 2


def gradient(rank: int, device: gd.Device) -> gd.Array:
    """This process's gradient: a different array on each rank."""
    return gd.arange(6, dtype=gd.float32, device=device).reshape(2, 3) * (rank + 1)


def allreduce(g: gd.Array) -> gd.Array:
    """The sum of g over every process, in g's storage where torch can share it."""
    if g.device.type == "cpu":
        dist.all_reduce(torch.from_dlpack(g))  # zero-copy: torch writes the sum into g
        return g
    host = torch.from_dlpack(g.cpu())  # torch cannot import an emulated GPU's memory
    dist.all_reduce(host)
    return gd.from_dlpack(host).to(g.device)


def worker(rank: int, port: int) -> None:
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=WORLD)
    device = gd.gpu(rank) if gd.num_gpus() >= WORLD else gd.cpu()
    g = gradient(rank, device)
    with gd.trace() as tr:
        total = allreduce(g)
    expected = sum(gradient(r, gd.cpu()) for r in range(WORLD))
    ok = total.cpu().tolist() == expected.tolist()
    print(f"rank {rank} on {gd.device_label(device)}: {total.cpu().tolist()} "
          f"({'matches' if ok else 'DIFFERS FROM'} the one-process sum; "
          f"{tr.count('copy')} copies, {tr.summary()['totals']['host_reads']} host reads)", flush=True)
    dist.destroy_process_group()
    if not ok:
        sys.exit(1)


def main() -> None:
    with socket.socket() as s:  # a free port on this machine for the rendezvous
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    mp.spawn(worker, args=(port,), nprocs=WORLD, join=True)


if __name__ == "__main__":
    main()
