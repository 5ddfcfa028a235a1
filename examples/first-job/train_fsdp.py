"""A first multi-node PyTorch FSDP job: a small decoder-only transformer trained on a token file
read from FSx for Lustre, with sharded checkpoints written back to FSx (and from there exported
to S3 by the file system's data repository association).

Launched by ``torchrun`` on every node (the Kubeflow Trainer runtime ``fm-torch-distributed``
on EKS, ``torchrun.sbatch`` on Slurm); it resumes from the newest checkpoint in
``--checkpoint-dir`` when there is one, so a restarted job continues where it stopped.

    torchrun train_fsdp.py --data /fsx/datasets/tokens.bin \\
        --checkpoint-dir /fsx/checkpoints/fsdp-first-job

The token file is a flat array of uint16 token ids (``numpy.ndarray.tofile``).

Progress follows the library's job-metrics contract (``fm_constructs.domain.job_metrics``):
local rank 0 of every node (one process per pod: the ranks share its network namespace)
serves ``fm_training_*`` metrics in Prometheus text format on port 9464 at ``/metrics``,
counting the tokens of every local rank, which the cluster's scraper collects for the
training dashboard and the stall alert.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np
import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
from job_metrics_exporter import Progress, serve_metrics
from torch import nn
from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict
from torch.distributed.fsdp import FullyShardedDataParallel, ShardingStrategy


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True, help="uint16 token file on /fsx")
    parser.add_argument("--checkpoint-dir", required=True, help="directory on /fsx/checkpoints")
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--checkpoint-every", type=int, default=50)
    parser.add_argument("--seq-len", type=int, default=1024)
    parser.add_argument("--batch-size", type=int, default=8, help="sequences per GPU")
    parser.add_argument("--vocab", type=int, default=32000)
    parser.add_argument("--dim", type=int, default=1024)
    parser.add_argument("--layers", type=int, default=12)
    return parser.parse_args()


class Block(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.attn = nn.MultiheadAttention(dim, num_heads=dim // 64, batch_first=True)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))
        self.norm1, self.norm2 = nn.LayerNorm(dim), nn.LayerNorm(dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n = x.size(1)
        mask = torch.triu(torch.ones(n, n, dtype=torch.bool, device=x.device), diagonal=1)
        h = self.norm1(x)
        x = x + self.attn(h, h, h, attn_mask=mask, need_weights=False)[0]
        return x + self.mlp(self.norm2(x))


class TinyLM(nn.Module):
    def __init__(self, vocab: int, dim: int, layers: int) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.blocks = nn.ModuleList(Block(dim) for _ in range(layers))
        self.head = nn.Linear(dim, vocab, bias=False)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        x = self.embed(tokens)
        for block in self.blocks:
            x = block(x)
        return self.head(x)


def batches(path: str, seq_len: int, batch: int, rank: int, world: int, seed: int):  # type: ignore[no-untyped-def]
    """Random windows of the token file, a different stream per rank."""
    tokens = np.memmap(path, dtype=np.uint16, mode="r")
    rng = np.random.default_rng(seed * world + rank)
    while True:
        starts = rng.integers(0, len(tokens) - seq_len - 1, size=batch)
        window = np.stack([tokens[s : s + seq_len + 1] for s in starts]).astype(np.int64)
        yield torch.from_numpy(window)


def newest_step(directory: Path) -> int | None:
    steps = [int(p.name.split("-")[1]) for p in directory.glob("step-*") if p.is_dir()]
    return max(steps) if steps else None


def main() -> None:
    args = parse_args()
    dist.init_process_group("nccl")
    rank, world = dist.get_rank(), dist.get_world_size()
    local_rank = int(os.environ["LOCAL_RANK"])
    local_world = int(os.environ.get("LOCAL_WORLD_SIZE", "1"))
    torch.cuda.set_device(local_rank)
    progress = Progress()
    if local_rank == 0:
        serve_metrics(progress)
    model = FullyShardedDataParallel(
        TinyLM(args.vocab, args.dim, args.layers).cuda(),
        sharding_strategy=ShardingStrategy.FULL_SHARD,
        use_orig_params=True,
    )
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
    checkpoints = Path(args.checkpoint_dir)
    start = 0
    resume = newest_step(checkpoints)
    if resume is not None:
        model_state, optim_state = get_state_dict(model, optimizer)
        state = {"model": model_state, "optim": optim_state}
        dcp.load(state, checkpoint_id=str(checkpoints / f"step-{resume}"))
        set_state_dict(
            model, optimizer, model_state_dict=state["model"], optim_state_dict=state["optim"]
        )
        start = resume
        if rank == 0:
            print(f"resumed from {checkpoints / f'step-{resume}'}", flush=True)
    data = batches(args.data, args.seq_len, args.batch_size, rank, world, seed=start)
    loss_fn = nn.CrossEntropyLoss()
    tick = time.time()
    for step in range(start + 1, args.steps + 1):
        began = time.time()
        window = next(data).cuda(non_blocking=True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = model(window[:, :-1])
            loss = loss_fn(logits.reshape(-1, args.vocab).float(), window[:, 1:].reshape(-1))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        # Tokens of every rank of this node: all take the same batch shape.
        progress.step(window[:, :-1].numel() * local_world, loss.item(), time.time() - began)
        if step % 10 == 0 and rank == 0:
            rate = 10 * args.batch_size * args.seq_len * world / (time.time() - tick)
            print(f"step {step} loss {loss.item():.3f} tokens/s {rate:,.0f}", flush=True)
            tick = time.time()
        if step % args.checkpoint_every == 0 or step == args.steps:
            model_state, optim_state = get_state_dict(model, optimizer)
            target = checkpoints / f"step-{step}"
            dcp.save({"model": model_state, "optim": optim_state}, checkpoint_id=str(target))
            progress.last_checkpoint = time.time()
            if rank == 0:
                print(f"checkpoint {target}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
