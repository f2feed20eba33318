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

``--checkpointing``: activation checkpointing in every system, as
``train.<job>.activation_checkpointing`` does it (Full FT: HF's per-layer; Nugget2D: the
compressor pass recomputed in backward, `Nugget2DModel.enable_activation_checkpointing`);
results get a ``_checkpointing`` suffix. ``--checkpointing both``: all six rows (three
systems, without and with) in one run, suffix ``_both``; each Nugget2D row's ratios are
against Full FT with the same setting.

Beside each step time its FLOP roofline (`benchmarks.roofline.lora_step_work` over the
peak dense FLOP/s of the device table or ``--peak-tflops``; unknown otherwise) and the
ratio. ``--results-dir`` / ``--max-seconds`` as in `benchmarks.run_options`: past the cap
no further system starts, and one still running is stopped; both are marked skipped.

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

Writes <--results-dir>/nugget2d_train_overhead_<device>[_checkpointing|_both].json and .md.
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
from benchmarks.roofline import DecoderShape, Peaks, flops, fmt_ratio, lora_step_work, ratio  # noqa: E402
from benchmarks.run_options import Deadline, add_run_options, peaks_of  # noqa: E402
from stages.common.device import synchronize  # noqa: E402

SYSTEMS = ("full_ft", "nugget2d", "nugget2d_two_pass")
CHECKPOINTING = {"off": (False,), "on": (True,), "both": (False, True)}
#: what activation checkpointing runs forward again (`benchmarks.roofline.lora_step_work`)
RECOMPUTED = {"full_ft": "all", "nugget2d": "all", "nugget2d_two_pass": "doc"}


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
        if args.checkpointing == "on":  # one always-on adapter: HF's per-layer checkpointing as is
            model.gradient_checkpointing_enable({"use_reentrant": False})
        params = [p for p in model.parameters() if p.requires_grad]

        def loss_of(b):
            ids = torch.cat([b["doc_ids"], b["prompt_ids"], b["answer_ids"]], dim=1)
            labels = ids.clone()
            labels[:, : args.doc + args.prompt] = -100  # loss on the answer only, as Nugget2D
            return model(input_ids=ids, labels=labels).loss
    else:
        model = Nugget2DModel(lm, config)
        if args.checkpointing == "on":  # the compressor pass recomputed in backward (train.*.activation_checkpointing)
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


def row_name(system: str, checkpointing: bool) -> str:
    return system + (" +checkpointing" if checkpointing else "")


def roofline_flops(args, system: str, checkpointing: bool) -> float:
    """FLOPs of one step of ``system`` (`benchmarks.roofline.lora_step_work`)."""
    from nugget_core.nugget2d import Nugget2DConfig
    from nugget_core.nuggets import nugget_counts

    config = Nugget2DConfig(ratio=args.ratio, scorer_layer=3, lora_rank=32)
    k = int(nugget_counts(torch.ones(1, args.doc), args.ratio)[0])
    return flops(lora_step_work(
        DecoderShape.from_config(SHAPES[args.shape]), batch=args.batch, doc=args.doc,
        prompt=args.prompt, answer=args.answer, rank=config.lora_rank,
        targets=config.lora_target_modules, nuggets=None if system == "full_ft" else k,
        recompute=RECOMPUTED[system] if checkpointing else "none"))


def run_child(system: str, checkpointing: bool, deadline: Deadline) -> dict:
    """One system's steps in a child process (its own peak memory); a row marked skipped
    when the time cap is reached before or during it."""
    left = deadline.remaining()
    if left is not None and left <= 0:
        return {"skipped": deadline.reason}
    cmd = [sys.executable, __file__, *sys.argv[1:], "--system", system,
           "--checkpointing", "on" if checkpointing else "off"]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO, timeout=left)
    except subprocess.TimeoutExpired:
        return {"skipped": f"stopped: --max-seconds {deadline.max_seconds:g} reached while it ran"}
    line = [x for x in proc.stdout.splitlines() if x.startswith("RESULT ")]
    if proc.returncode != 0 or not line:
        raise SystemExit(f"{system} failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
    return json.loads(line[-1][len("RESULT "):])


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
    p.add_argument("--checkpointing", nargs="?", const="on", default="off", choices=sorted(CHECKPOINTING),
                   help="activation checkpointing in every system (bare flag: on); both: every system "
                        "without and with it, in one run (see the module docstring)")
    p.add_argument("--system", choices=SYSTEMS, help="internal: run one system, print JSON")
    add_run_options(p)
    args = p.parse_args()
    args.dtype = args.dtype or ("bf16" if args.device == "cuda" else "fp32")
    if args.system:
        print("RESULT " + json.dumps(run_system(args)), flush=True)
        return
    deadline = Deadline(args.max_seconds)
    device_name = torch.cuda.get_device_name() if args.device == "cuda" else f"{os.cpu_count()} cpus"
    peaks = peaks_of(args, device_name)
    results: dict[str, dict] = {}
    for checkpointing in CHECKPOINTING[args.checkpointing]:
        for system in SYSTEMS:
            name = row_name(system, checkpointing)
            r = results[name] = run_child(system, checkpointing, deadline)
            r["checkpointing"] = checkpointing
            if "skipped" in r:
                print(f"{name}: {r['skipped']}", flush=True)
                continue
            r["roofline_flops"] = roofline_flops(args, system, checkpointing)
            r["roofline_s"] = peaks.seconds_for_flops(r["roofline_flops"])
            r["over_roofline"] = ratio(r["step_s"], r["roofline_s"])
            print(f"{name}: {r['step_s']:.3f} s/step ({fmt_ratio(r['over_roofline'])} its roofline), "
                  f"peak {r['peak_bytes'] / 2**30:.2f} GiB "
                  f"({r['peak_above_before_bytes'] / 2**30:.2f} above the start)", flush=True)
    ratios = {}
    for name, nug in results.items():
        full = results[row_name("full_ft", nug["checkpointing"])]
        if name.startswith("full_ft") or "skipped" in nug or "skipped" in full:
            continue
        ratios[name] = {  # against Full FT with the same checkpointing setting
            "step_time": nug["step_s"] / full["step_s"],
            "peak_memory": nug["peak_bytes"] / full["peak_bytes"],
            "peak_above_start": nug["peak_above_before_bytes"] / full["peak_above_before_bytes"],
        }
        if args.device == "cpu":
            ratios[name]["ops"] = ((nug["forward_ops"] + nug["backward_ops"])
                                   / (full["forward_ops"] + full["backward_ops"]))
            ratios[name]["saved_activations"] = nug["saved_activation_bytes"] / full["saved_activation_bytes"]
    write(args, device_name, peaks, results, ratios)


def write(args, device_name: str, peaks: Peaks, results: dict, ratios: dict) -> None:
    meta = {k: v for k, v in vars(args).items() if k != "system"}
    meta.update(torch=torch.__version__, device_name=device_name, results_dir=str(args.results_dir),
                peak_tflops=peaks.peak_tflops, peaks_source=peaks.source)
    args.results_dir.mkdir(parents=True, exist_ok=True)
    suffix = {"off": "", "on": "_checkpointing", "both": "_both"}[args.checkpointing]
    out = args.results_dir / f"nugget2d_train_overhead_{args.device}{suffix}"
    out.with_suffix(".json").write_text(
        json.dumps({"meta": meta, "results": results, "ratios": ratios}, indent=2, default=str) + "\n")
    mem = "CUDA max_memory_allocated" if args.device == "cuda" else "peak RSS"
    extra = ("GPU busy (one profiled step)" if args.device == "cuda"
             else "activations kept for backward | aten ops per step (forward / backward)")
    setting = {"off": "", "on": ", activation checkpointing",
               "both": ", without and with activation checkpointing"}[args.checkpointing]
    peak = "unknown" if peaks.peak_tflops is None else f"{peaks.peak_tflops:g} TFLOP/s"
    lines = [
        f"# Nugget2D vs Full-FT LoRA training step: {args.shape}, {args.dtype}, {device_name}, "
        f"batch {args.batch} x (doc {args.doc} + prompt {args.prompt} + answer {args.answer}), "
        f"r={args.ratio}, {args.steps} steps{setting}",
        "",
        f"`python benchmarks/nugget2d_train_overhead.py {' '.join(sys.argv[1:])}`",
        "",
        f"Roofline: the step's FLOPs (`benchmarks/roofline.py`: 4 per frozen weight and token, 6 per "
        f"LoRA weight and token, 12 d per visible attention pair and layer, plus the forward "
        f"checkpointing recomputes) / {peak} ({peaks.source}).",
        "",
        f"| system | s/step | roofline s/step | s/step / roofline | peak ({mem}) "
        f"| peak above the start of training | {extra} |",
        "|---|---:|---:|---:|---:|---:|---:|" + ("---:|" if args.device == "cpu" else ""),
    ]
    for name, r in results.items():
        if "skipped" in r:
            lines.append(f"| {name} | {r['skipped']} | | | | |" + (" |" if args.device == "cpu" else ""))
            continue
        where = (f"{r['saved_activation_bytes'] / 2**20:.1f} MiB | {r['forward_ops']:,} / {r['backward_ops']:,}"
                 if args.device == "cpu" else f"{100 * r['gpu_busy']:.0f}%")
        roof = "unknown" if r["roofline_s"] is None else f"{r['roofline_s']:.4f}"
        lines.append(f"| {name} | {r['step_s']:.3f} | {roof} | {fmt_ratio(r['over_roofline'])} "
                     f"| {r['peak_bytes'] / 2**30:.2f} GiB | {r['peak_above_before_bytes'] / 2**30:.2f} GiB "
                     f"| {where} |")
    lines.append("")
    for name, r in ratios.items():
        full = row_name("full_ft", results[name]["checkpointing"])
        lines.append(f"{name} / {full}: step time {r['step_time']:.2f}x, peak memory {r['peak_memory']:.2f}x, "
                     f"peak above the start {r['peak_above_start']:.2f}x"
                     + (f", activations kept {r['saved_activations']:.2f}x, aten ops per step {r['ops']:.2f}x"
                        if "ops" in r else "") + "  ")
    out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
