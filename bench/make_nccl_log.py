#!/usr/bin/env python3
"""Writes a synthetic NCCL job log of about SIZE_MB megabytes to PATH: a 64-host x 8-GPU job
(2.21-format lines from src/nccl/testdata), channel lines for every rank, interleaved with
training output, repeated until the size is reached (a long job that re-creates communicators).

usage: make_nccl_log.py PATH SIZE_MB
"""
import sys

path, size_mb = sys.argv[1], int(sys.argv[2])
hosts, gpus = 64, 8
nranks = hosts * gpus
block = []
for h in range(hosts):
    host = "gpu-node-%03d" % h
    for g in range(gpus):
        rank = h * gpus + g
        pre = "%s:%d:%d [%d] NCCL INFO " % (host, 10000 + rank, 10000 + rank, g)
        block.append(pre + "NET/IB : Using [0]mlx5_%d:1/IB [RO]; OOB ib0:10.0.%d.%d<0>" % (g, h, g))
        block.append(pre + "Using network IB")
        for ch in range(4):
            nxt, prv = (rank + 1) % nranks, (rank - 1) % nranks
            block.append(pre + "Channel %02d/0 : %d[%d] -> %d[%d] [send] via NET/IB/%d/GDRDMA" %
                         (ch, rank, g, nxt, nxt % gpus, g))
            block.append(pre + "Channel %02d/0 : %d[%d] -> %d[%d] [receive] via NET/IB/%d/GDRDMA" %
                         (ch, prv, prv % gpus, rank, g, g))
        block.append(pre + "ncclCommInitRank comm 0x5e303a52bd70 rank %d nranks %d cudaDev %d "
                     "nvmlDev %d busId 18000 commId 0xadcb40d61cc1bc4b - Init COMPLETE" %
                     (rank, nranks, g, g))
        for step in range(10):
            block.append("[rank%d] step %d loss 2.%04d lr 3.0e-04 grad_norm 1.%03d tokens/s 41234" %
                         (rank, step, rank * 7 % 10000, step))
text = ("\n".join(block) + "\n").encode()
target = size_mb * 1000 * 1000
with open(path, "wb") as f:
    written = 0
    while written < target:
        f.write(text)
        written += len(text)
print("%s: %d bytes, %d NCCL INFO lines per block of %d lines" %
      (path, written, sum("NCCL INFO" in l for l in block), len(block)))
