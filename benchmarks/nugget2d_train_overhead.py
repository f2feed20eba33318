"""Training step time and peak memory: Nugget2D vs Full fine-tuning with LoRA, same tokens.

Not a test. A LLaMA-shaped LM with random weights (shapes from
`benchmarks/nugget2d_decode.py`) trains on random batches of document + prompt + answer
with the fine-tune objective, AdamW over the trainable parameters, loss on the answer:

- ``full_ft``: one LoRA adapter (same rank and target modules) on the concatenated text
  ``document | prompt | answer`` (the Full baseline of Nugget2D's tables);
- ``nugget2d``: `Nugget2DModel` (phi encodes the document, the scorer keeps r = 0.1 of it,
  theta decodes prompt + answer from the nuggets) in its default joint pass: one forward
  over document + prompt + answer (`nugget_core.nugget2d.joint`);
- ``nugget2d_two_pass``: the same model with ``training_pass=two_pass`` (compress, then
  decode the gathered nuggets: the layer stack twice).

``--checkpointing``: activation checkpointing in both, as ``train.<job>.activation_checkpointing``
does it (Full FT: HF's per-layer; Nugget2D: the compressor pass recomputed in backward,
`Nugget2DModel.enable_activation_checkpointing`); results get a ``_checkpointing`` suffix.

Each system runs in its own child process (peak memory is per process: CUDA
``max_memory_allocated``; on CPU the peak RSS above the RSS before the first step).
Step time: mean of ``--steps`` steps after 2 warm-up steps, synchronised.

Where a step's time and memory go, after the timed steps: on CPU the bytes of the
activations one step's forward keeps for backward (distinct storages, weights excluded:
a shape-exact count, unlike the allocator-dependent peak RSS) and the aten ops of its
forward and of its backward (``TorchDispatchMode``, as ``nugget2d_decode.py`` counts
decode ops; a GPU launches a kernel for most of them, so when a pass's kernels are short,
e.g. Nugget2D's decoder pass on prompt + answer alone, the count, not the FLOPs, sets
its time); on CUDA the GPU busy share of one profiled step (kernel time / wall time).

    python benchmarks/nugget2d_train_overhead.py                    # CPU, tiny-8l
    python benchmarks/nugget2d_train_overhead.py --device cuda --shape llama2-7b \
        --doc 1024 --prompt 16 --answer 128 --batch 2              # one H100

Writes benchmarks/results/nugget2d_train_overhead_<device>.json and .md.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import torch  # noqa: E402

from benchmarks.nugget2d_decode import SHAPES, OpCounter, build_lm, kernel_seconds  # noqa: E402
from stages.common.device import synchronize  # noqa: E402

RESULTS = Path(__file__).parent / "results"
SYSTEMS = ("full_ft", "nugget2d", "nugget2d_two_pass")


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def batch_tensors(args, vocab: int, device: torch.device, step: int) -> dict[str, torch.Tensor]:
    gen = torch.Generator().manual_seed(step)
    out = {}
    for name, n in (("doc", args.doc), ("prompt", args.prompt), ("answer", args.answer)):
        out[f"{name}_ids"] = torch.randint(100, vocab, (args.batch, n), generator=gen).to(device)
        out[f"{name}_mask"] = torch.ones(args.batch, n, dtype=torch.long, device=device)
    return out


def run_system(args) -> dict:
    """One system's training steps in this process; returns its measurements."""
    from peft import get_peft_model

    from nugget_core.nugget2d import Nugget2DConfig, Nugget2DModel
    from nugget_core.nugget2d.adapters import lora_config
    from nugget_core.nugget2d.objectives import objective_loss, set_objective

    device = torch.device(args.device)
    torch.set_num_threads(args.threads)
    dtype = torch.bfloat16 if args.dtype == "bf16" else torch.float32
    lm = build_lm(args.shape, device, dtype, args.doc + args.prompt + args.answer + 64)
    config = Nugget2DConfig(ratio=args.ratio, scorer_layer=3, lora_rank=32,
                            training_pass="two_pass" if args.system == "nugget2d_two_pass" else "joint")
    if args.system == "full_ft":
        for p in lm.parameters():
            p.requires_grad_(False)
        model = get_peft_model(lm, lora_config(config))
        if args.checkpointing:  # one always-on adapter: HF's per-layer checkpointing as is
            model.gradient_checkpointing_enable({"use_reentrant": False})
        params = [p for p in model.parameters() if p.requires_grad]

        def loss_of(b):
            ids = torch.cat([b["doc_ids"], b["prompt_ids"], b["answer_ids"]], dim=1)
            labels = ids.clone()
            labels[:, : args.doc + args.prompt] = -100  # loss on the answer only, as Nugget2D
            return model(input_ids=ids, labels=labels).loss
    else:
        model = Nugget2DModel(lm, config)
        if args.checkpointing:  # the compressor pass recomputed in backward (train.*.activation_checkpointing)
            model.enable_activation_checkpointing()
        params = set_objective(model, "finetune")

        def loss_of(b):
            return objective_loss(model, "finetune", b).loss
    model.train()
    opt = torch.optim.AdamW(params, lr=1e-4)
    vocab = lm.config.vocab_size
    synchronize(device)
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    base_mem = torch.cuda.memory_allocated(device) if device.type == "cuda" else rss_bytes()
    times = []

    def train_step(b: dict[str, torch.Tensor]) -> None:
        loss_of(b).backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    for step in range(2 + args.steps):
        b = batch_tensors(args, vocab, device, step)
        synchronize(device)
        start = time.perf_counter()
        train_step(b)
        synchronize(device)
        if step >= 2:
            times.append(time.perf_counter() - start)
    if device.type == "cuda":
        peak = torch.cuda.max_memory_allocated(device)
    else:
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    out = {
        "system": args.system, "step_s": sum(times) / len(times), "peak_bytes": peak,
        "before_steps_bytes": base_mem, "peak_above_before_bytes": peak - base_mem,
        "trainable_params": sum(p.numel() for p in params),
    }
    b = batch_tensors(args, vocab, device, 0)
    if device.type == "cuda":  # after the peak was read: the profiler allocates too
        synchronize(device)
        start = time.perf_counter()
        kernels = kernel_seconds(lambda: train_step(b), device)
        out["gpu_busy"] = kernels / (time.perf_counter() - start)
    else:  # backward runs on this thread on CPU (on CUDA, autograd's device thread)
        weights = {p.untyped_storage().data_ptr() for p in model.parameters()}
        saved: dict[int, int] = {}

        def pack(t: torch.Tensor) -> torch.Tensor:
            storage = t.untyped_storage()
            if storage.data_ptr() not in weights:  # activations, not the (frozen) weights
                saved[storage.data_ptr()] = storage.nbytes()
            return t

        with OpCounter() as forward, torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            loss = loss_of(b)
        with OpCounter() as backward:
            loss.backward()
        out["forward_ops"], out["backward_ops"] = sum(forward.ops.values()), sum(backward.ops.values())
        out["saved_activation_bytes"] = sum(saved.values())
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    p.add_argument("--shape", default="tiny-8l", choices=sorted(SHAPES))
    p.add_argument("--dtype", default=None, choices=["fp32", "bf16"], help="default: fp32 cpu, bf16 cuda")
    p.add_argument("--doc", type=int, default=256)
    p.add_argument("--prompt", type=int, default=8)
    p.add_argument("--answer", type=int, default=32)
    p.add_argument("--batch", type=int, default=2)
    p.add_argument("--ratio", type=float, default=0.1)
    p.add_argument("--steps", type=int, default=6)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--checkpointing", action="store_true",
                   help="activation checkpointing in both systems (see the module docstring)")
    p.add_argument("--system", choices=SYSTEMS, help="internal: run one system, print JSON")
    args = p.parse_args()
    args.dtype = args.dtype or ("bf16" if args.device == "cuda" else "fp32")
    if args.system:
        print("RESULT " + json.dumps(run_system(args)), flush=True)
        return
    results = {}
    for system in SYSTEMS:
        cmd = [sys.executable, __file__, *sys.argv[1:], "--system", system]
        proc = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO)
        line = [x for x in proc.stdout.splitlines() if x.startswith("RESULT ")]
        if proc.returncode != 0 or not line:
            raise SystemExit(f"{system} failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
        results[system] = json.loads(line[-1][len("RESULT "):])
        r = results[system]
        print(f"{system}: {r['step_s']:.3f} s/step, peak {r['peak_bytes'] / 2**30:.2f} GiB "
              f"({r['peak_above_before_bytes'] / 2**30:.2f} above the start)", flush=True)
    full = results["full_ft"]
    ratios = {}
    for system in SYSTEMS[1:]:
        nug = results[system]
        ratios[system] = {
            "step_time": nug["step_s"] / full["step_s"],
            "peak_memory": nug["peak_bytes"] / full["peak_bytes"],
            "peak_above_start": nug["peak_above_before_bytes"] / full["peak_above_before_bytes"],
        }
        if args.device == "cpu":
            ratios[system]["ops"] = ((nug["forward_ops"] + nug["backward_ops"])
                                     / (full["forward_ops"] + full["backward_ops"]))
            ratios[system]["saved_activations"] = nug["saved_activation_bytes"] / full["saved_activation_bytes"]
    meta = {k: v for k, v in vars(args).items() if k != "system"}
    meta.update(torch=torch.__version__,
                device_name=torch.cuda.get_device_name() if args.device == "cuda" else f"{os.cpu_count()} cpus")
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / f"nugget2d_train_overhead_{args.device}{'_checkpointing' if args.checkpointing else ''}"
    out.with_suffix(".json").write_text(json.dumps({"meta": meta, "results": results, "ratios": ratios}, indent=2) + "\n")
    mem = "CUDA max_memory_allocated" if args.device == "cuda" else "peak RSS"
    extra = ("GPU busy (one profiled step)" if args.device == "cuda"
             else "activations kept for backward | aten ops per step (forward / backward)")
    lines = [
        f"# Nugget2D vs Full-FT LoRA training step: {args.shape}, {args.dtype}, {meta['device_name']}, "
        f"batch {args.batch} x (doc {args.doc} + prompt {args.prompt} + answer {args.answer}), "
        f"r={args.ratio}, {args.steps} steps{', activation checkpointing' if args.checkpointing else ''}",
        "",
        f"`python benchmarks/nugget2d_train_overhead.py {' '.join(sys.argv[1:])}`",
        "",
        f"| system | s/step | peak ({mem}) | peak above the start of training | {extra} |",
        "|---|---:|---:|---:|---:|" + ("---:|" if args.device == "cpu" else ""),
    ]
    for name, r in results.items():
        where = (f"{r['saved_activation_bytes'] / 2**20:.1f} MiB | {r['forward_ops']:,} / {r['backward_ops']:,}"
                 if args.device == "cpu" else f"{100 * r['gpu_busy']:.0f}%")
        lines.append(f"| {name} | {r['step_s']:.3f} | {r['peak_bytes'] / 2**30:.2f} GiB "
                     f"| {r['peak_above_before_bytes'] / 2**30:.2f} GiB | {where} |")
    lines.append("")
    for system, r in ratios.items():
        lines.append(f"{system} / full_ft: step time {r['step_time']:.2f}x, peak memory {r['peak_memory']:.2f}x, "
                     f"peak above the start {r['peak_above_start']:.2f}x"
                     + (f", activations kept {r['saved_activations']:.2f}x, aten ops per step {r['ops']:.2f}x"
                        if "ops" in r else "") + "  ")
    out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
