"""Decode cost of Nugget2D (r=0.1) vs the plain LM, side by side in one run.

Not a test. A LLaMA-shaped LM with random weights (the cost of a step does not depend on
them) decodes greedily after a document of n tokens and an 8-token prompt. Per context
length, for each system: steady-state ms per generated token, measured as
``(t(S1 + steps) - t(S1)) / steps`` so prefill, setup and CUDA-graph capture cancel out;
on CPU also aten ops per generated token (ops that reach a kernel, counted with a
``TorchDispatchMode`` the same way); on CUDA also the GPU busy share (kernel time from
a profiled run over the wall time of the unprofiled one).

Systems:
- ``hf_generate``: vanilla HF ``generate`` of the plain LM on document + prompt;
- ``hf_generate_wrapped``: the same through the Nugget2D-wrapped (peft) LM, adapters off;
- ``reference``: Nugget2D through the reference loop (DynamicCache, per-step 4D mask,
  unmerged LoRA: the decoder this project shipped before the static path);
- ``nugget2d``: Nugget2D `generate_from_context` (static cache, theta merged, CUDA graph
  on GPUs) on the ceil(r n) nuggets;
- ``full_static``: the same decoder on every document token (Full, plain LM): what the
  KV saving alone buys.

``--max-batch`` also searches, at the largest context, the largest batch whose decode
fits in GPU memory for ``full_static`` and ``nugget2d`` (each sequence holds its own KV;
one context is encoded and replicated) and reports tokens/s at that batch.

    python benchmarks/nugget2d_decode.py                               # CPU proxy
    python benchmarks/nugget2d_decode.py --device cuda --shape llama2-7b \
        --contexts 4096 32768 --max-batch                              # one H100

Beside every measured time its roofline (`benchmarks.roofline`): the bytes one step reads
(the weights once, plus the KV it attends to) over the device's memory bandwidth, and the
measured / roofline ratio; for serving, the roofline tokens/s at the batch found and the
measured share of it. The bandwidth comes from the device table, or ``--bandwidth-gbs``
(which also gives a CPU run its roofline); otherwise it is reported as unknown.
``--max-seconds`` caps the run (`benchmarks.run_options`).

Writes <--results-dir, default benchmarks/results>/nugget2d_decode_<device>[_serving].json and .md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script from anywhere

import torch  # noqa: E402
import transformers  # noqa: E402
from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402
from transformers import LlamaConfig, LlamaForCausalLM  # noqa: E402

from benchmarks.roofline import (  # noqa: E402
    DecoderShape,
    Peaks,
    decode_kv_tokens,
    decode_step_bytes,
    fmt_ratio,
    ratio,
)
from benchmarks.run_options import Deadline, add_run_options, peaks_of  # noqa: E402
from nugget_core.nugget2d import Nugget2DConfig, Nugget2DModel  # noqa: E402
from nugget_core.nugget2d.context import CompressedContext  # noqa: E402
from nugget_core.nugget2d.generation import generate_from_context  # noqa: E402
from nugget_core.nugget2d.kv import LayerKV  # noqa: E402
from nugget_core.nugget2d.reference_generation import reference_generate_from_context  # noqa: E402
from stages.common.device import synchronize  # noqa: E402
from stages.costs.known_models import LLAMA_7B  # noqa: E402

PROMPT = 8
SYSTEMS = ("hf_generate", "hf_generate_wrapped", "reference", "nugget2d", "full_static")
#: the systems decoding from the nuggets (the rest attend to the whole context)
FROM_NUGGETS = ("reference", "nugget2d")
SERVING_STEPS = (4, 16)  # the batch search's subtracted and timed steps
SHAPES = {
    # the CPU proxy: small enough for one thread, deep enough for per-layer overheads to show
    "tiny-8l": dict(hidden_size=256, intermediate_size=688, num_hidden_layers=8,
                    num_attention_heads=4, num_key_value_heads=4, vocab_size=8192),
    # LLaMA-2-7B (no GQA: 32 KV heads): 512 KiB of bf16 KV per token
    "llama2-7b": dict(LLAMA_7B),
}


class OpCounter(TorchDispatchMode):
    """Counts aten ops that reach a kernel (composite ops count as what they run)."""

    def __init__(self) -> None:
        super().__init__()
        self.ops: Counter[str] = Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.ops[str(func.overloadpacket)] += 1
        return func(*args, **(kwargs or {}))


def build_lm(shape: str, device: torch.device, dtype: torch.dtype, max_len: int) -> LlamaForCausalLM:
    config = LlamaConfig(
        **SHAPES[shape], max_position_embeddings=max_len, rope_theta=10000.0,
        attn_implementation="sdpa", pad_token_id=0, bos_token_id=1, eos_token_id=2,
    )
    torch.manual_seed(0)
    previous = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        with torch.device(device):
            lm = LlamaForCausalLM(config)
    finally:
        torch.set_default_dtype(previous)
    lm.generation_config.eos_token_id = None  # every run decodes exactly the steps asked
    lm.generation_config.pad_token_id = 0
    return lm.eval()


def timed(fn: Callable[[int], object], steps: int, device: torch.device) -> float:
    """Wall seconds of ``fn(steps)`` (after the device has drained)."""
    synchronize(device)
    start = time.perf_counter()
    fn(steps)
    synchronize(device)
    return time.perf_counter() - start


def per_token(fn: Callable[[int], object], base: int, steps: int, device: torch.device,
              repeats: int) -> float:
    """Steady-state seconds per generated token: the best of ``repeats`` differences
    ``t(base + steps) - t(base)``."""
    fn(base)  # warm-up (allocator, kernels, lazy init)
    best = float("inf")
    for _ in range(repeats):
        best = min(best, (timed(fn, base + steps, device) - timed(fn, base, device)) / steps)
    return best


def ops_per_token(fn: Callable[[int], object], base: int, steps: int) -> float:
    counts = []
    for n in (base, base + steps):
        with OpCounter() as counter:
            fn(n)
        counts.append(sum(counter.ops.values()))
    return (counts[1] - counts[0]) / steps


def kernel_seconds(fn: Callable[[], object], device: torch.device) -> float:
    """GPU time (kernels, copies, memsets) of ``fn()``, from the profiler."""
    from torch.profiler import ProfilerActivity, profile

    synchronize(device)
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        fn()
        synchronize(device)
    return sum(e.time_range.elapsed_us() for e in prof.events()
               if e.device_type == torch.autograd.DeviceType.CUDA) / 1e6


def gpu_kernel_seconds(fn: Callable[[int], object], base: int, steps: int,
                       device: torch.device) -> float:
    """GPU time (kernels, copies, memsets) per generated token, from the profiler."""
    totals = [kernel_seconds(lambda n=n: fn(n), device) for n in (base, base + steps)]
    return (totals[1] - totals[0]) / steps


def replicate(ctx: CompressedContext, batch: int) -> CompressedContext:
    """``batch`` rows viewing one encoded row (no memory): the decoder's static cache
    then holds ``batch`` real copies, as a server holding ``batch`` sequences would."""
    rows = lambda t: t.expand(batch, *t.shape[1:])  # noqa: E731
    keys = [rows(k) for k in ctx.kv.keys]
    values = [rows(v) for v in ctx.kv.values]
    return CompressedContext(LayerKV(keys, values), rows(ctx.mask), rows(ctx.scores),
                             rows(ctx.positions), rows(ctx.lengths))


def max_batch(model: Nugget2DModel, ctx: CompressedContext, prompt: torch.Tensor,
              adapter: str | None, limit: int, device: torch.device, deadline: Deadline) -> dict:
    """Largest batch (doubling, then bisection) whose replicated context and decode fit;
    tokens/s there. Past the deadline no further batch is tried (``stopped_early``)."""
    base, steps = SERVING_STEPS

    def fits(batch: int) -> float | None:
        try:
            def run(n: int) -> None:
                big = replicate(ctx, batch)
                generate_from_context(model, big, prompt.expand(batch, -1), max_new_tokens=n,
                                      adapter=adapter, consume_context=True)
            t = per_token(run, base, steps, device, repeats=1)
            return batch / t
        except torch.OutOfMemoryError:
            return None
        finally:
            torch.cuda.empty_cache()

    good, good_tps, bad = 0, 0.0, None
    batch = 1
    stopped = None
    while batch <= limit:
        if deadline.expired():
            stopped = deadline.reason.replace("it started", f"batch {batch}")
            break
        tps = fits(batch)
        print(f"    batch {batch}: {'OOM' if tps is None else f'{tps:.0f} tokens/s'}", flush=True)
        if tps is None:
            bad = batch
            break
        good, good_tps, batch = batch, tps, batch * 2
    while bad is not None and bad - good > 1 and stopped is None:
        if deadline.expired():
            stopped = deadline.reason.replace("it started", f"batch {(good + bad) // 2}")
            break
        mid = (good + bad) // 2
        tps = fits(mid)
        print(f"    batch {mid}: {'OOM' if tps is None else f'{tps:.0f} tokens/s'}", flush=True)
        if tps is None:
            bad = mid
        else:
            good, good_tps = mid, tps
    return {"max_batch": good, "tokens_per_s": good_tps, "first_oom": bad, "limit": limit,
            "stopped_early": stopped}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--shape", default="tiny-8l", choices=sorted(SHAPES))
    parser.add_argument("--dtype", default=None, choices=["fp32", "bf16"],
                        help="default: fp32 on cpu, bf16 on cuda")
    parser.add_argument("--contexts", type=int, nargs="+", default=[512])
    parser.add_argument("--steps", type=int, default=32, help="timed steps (after --base)")
    parser.add_argument("--base", type=int, default=8, help="steps of the subtracted run")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--ratio", type=float, default=0.1)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--skip-reference", action="store_true")
    parser.add_argument("--max-batch", action="store_true")
    parser.add_argument("--skip-latency", action="store_true",
                        help="only the --max-batch search (the latency table is left out)")
    parser.add_argument("--batch-limit", type=int, default=256)
    add_run_options(parser)
    args = parser.parse_args()
    deadline = Deadline(args.max_seconds)
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise SystemExit("--device cuda: torch sees no CUDA device")
    if args.max_batch and device.type != "cuda":
        raise SystemExit("--max-batch measures GPU memory: use --device cuda")
    torch.set_num_threads(args.threads)
    dtype = {"fp32": torch.float32, "bf16": torch.bfloat16}[
        args.dtype or ("bf16" if device.type == "cuda" else "fp32")]
    device_name = (torch.cuda.get_device_name(device) if device.type == "cuda"
                   else f"{platform.machine()} {os.cpu_count()} cpus, {args.threads} thread(s)")
    peaks = peaks_of(args, device_name)
    shape = DecoderShape.from_config(SHAPES[args.shape])
    max_len = max(args.contexts) + PROMPT + args.base + args.steps + 64
    lm = build_lm(args.shape, device, dtype, max_len)
    vocab = lm.config.vocab_size
    gen = torch.Generator().manual_seed(0)
    docs = {n: torch.randint(100, vocab, (1, n), generator=gen).to(device) for n in args.contexts}
    prompt = torch.randint(100, vocab, (1, PROMPT), generator=gen).to(device)
    rows: dict[int, dict] = {n: {"context": n} for n in args.contexts}

    def roofline_s(attended: int, base: int, steps: int, batch: int = 1) -> float | None:
        """Least seconds per decode step reading ``attended`` cached tokens (+ generated)."""
        kv = decode_kv_tokens(attended, base, steps)
        return peaks.seconds_for_bytes(decode_step_bytes(shape, kv, dtype.itemsize, batch))

    def measure(name: str, n: int, fn: Callable[[int], object], attended: int) -> None:
        row = rows[n]
        if deadline.expired():
            row[f"{name}_skipped"] = deadline.reason
            print(f"  n={n} {name}: {deadline.reason}", flush=True)
            return
        with torch.no_grad():
            sec = per_token(fn, args.base, args.steps, device, args.repeats)
            row[f"{name}_ms"] = 1000 * sec
            if device.type == "cpu":
                row[f"{name}_ops"] = ops_per_token(fn, args.base, args.steps)
            else:
                row[f"{name}_busy"] = gpu_kernel_seconds(fn, args.base, args.steps, device) / sec
        roof = roofline_s(attended, args.base, args.steps)
        row[f"{name}_roofline_ms"] = None if roof is None else 1000 * roof
        row[f"{name}_over_roofline"] = ratio(sec, roof)
        print(f"  n={n} {name}: " + ", ".join(
            f"{k[len(name) + 1:]}={'unknown' if v is None else f'{v:.3g}'}"
            for k, v in row.items() if k.startswith(name + "_")), flush=True)

    def hf(n: int) -> Callable[[int], object]:
        ids = torch.cat([docs[n], prompt], dim=1)
        return lambda s: lm.generate(ids, max_new_tokens=s, min_new_tokens=s, do_sample=False)

    latency = [] if args.skip_latency else args.contexts
    for n in latency:  # the plain LM, before peft touches it
        measure("hf_generate", n, hf(n), n + PROMPT)
    model = Nugget2DModel(lm, Nugget2DConfig(ratio=args.ratio, scorer_layer=3, lora_rank=32)).eval()
    with torch.no_grad():
        for p in model.peft.parameters():
            if p.requires_grad and p.dim() == 2 and p.shape[0] > p.shape[1]:
                p.normal_(std=0.01)  # lora_B != 0: theta really is merged, not a no-op
    for n in latency:
        with torch.no_grad(), model.merged_adapter(None):
            measure("hf_generate_wrapped", n, hf(n), n + PROMPT)
        if deadline.expired():  # not even the encoding: every later system is skipped
            for name in SYSTEMS[2:]:
                measure(name, n, lambda s: None, 0)
            continue
        with torch.no_grad():
            nug = model.compress(docs[n], ratio=args.ratio)
            full = model.encode_full(docs[n])
        rows[n].update(nuggets=nug.kv.length, nugget_kv_bytes=nug.nbytes(), full_kv_bytes=full.nbytes())

        def static(ctx, adapter):
            return lambda s: generate_from_context(model, ctx, prompt, max_new_tokens=s, adapter=adapter)

        if not args.skip_reference:
            measure("reference", n, lambda s, c=nug: reference_generate_from_context(
                model, c, prompt, max_new_tokens=s), nug.kv.length + PROMPT)
        measure("nugget2d", n, static(nug, "decoder"), nug.kv.length + PROMPT)
        measure("full_static", n, static(full, None), n + PROMPT)
        row = rows[n]
        for other in ("hf_generate", "full_static"):
            if "nugget2d_ms" in row and f"{other}_ms" in row:
                row[f"nugget2d_over_{other}"] = row["nugget2d_ms"] / row[f"{other}_ms"]
                if device.type == "cpu":
                    row[f"nugget2d_ops_over_{other}"] = row["nugget2d_ops"] / row[f"{other}_ops"]
        del nug, full  # the serving search below encodes afresh
    serving = {}
    if args.max_batch:
        n = max(args.contexts)
        base, steps = SERVING_STEPS
        for name in ("full_static", "nugget2d"):
            if deadline.expired():
                serving[name] = {"skipped": deadline.reason}
                continue
            torch.cuda.empty_cache()
            with torch.no_grad():  # only this system's one encoded row is held
                if name == "full_static":
                    ctx, adapter = model.encode_full(docs[n]), None
                else:
                    ctx, adapter = model.compress(docs[n], ratio=args.ratio), "decoder"
                print(f"  max batch at n={n}, {name}", flush=True)
                found = max_batch(model, ctx, prompt, adapter, args.batch_limit, device, deadline)
            attended = ctx.kv.length + PROMPT
            del ctx
            roof = roofline_s(attended, base, steps, found["max_batch"]) if found["max_batch"] else None
            found["roofline_tokens_per_s"] = None if roof is None else found["max_batch"] / roof
            found["share_of_roofline"] = ratio(found["tokens_per_s"], found["roofline_tokens_per_s"])
            serving[name] = found
        serving["context"] = n
        serving["held_besides_the_batch"] = (
            "weights; one encoded row of the system (the replicated source); while decoding "
            "with theta merged, one extra copy of the LoRA-targeted weights (attention "
            "projections)")
    write(args, device, device_name, dtype, lm, peaks, list(rows.values()), serving)


def cell(value: float | None, pattern: str) -> str:
    return "unknown" if value is None else pattern.format(value)


def write(args, device, device_name, dtype, lm, peaks: Peaks, rows, serving) -> None:
    meta = {
        "shape": args.shape, "layers": lm.config.num_hidden_layers, "hidden": lm.config.hidden_size,
        "dtype": str(dtype).removeprefix("torch."), "device": device.type, "device_name": device_name,
        "ratio": args.ratio, "prompt": PROMPT, "base_steps": args.base, "timed_steps": args.steps,
        "repeats": args.repeats, "torch": torch.__version__, "transformers": transformers.__version__,
        "bandwidth_gbs": peaks.bandwidth_gbs, "peaks_source": peaks.source,
        "max_seconds": args.max_seconds,
        "command": " ".join(["python benchmarks/nugget2d_decode.py", *sys.argv[1:]]),
    }
    out = args.results_dir / f"nugget2d_decode_{device.type}{'_serving' if args.skip_latency else ''}"
    args.results_dir.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps({"meta": meta, "rows": rows, "serving": serving}, indent=2) + "\n")
    extra = "aten ops" if device.type == "cpu" else "GPU busy"
    key = "ops" if device.type == "cpu" else "busy"
    fmt = (lambda v: f"{v:.0f}") if key == "ops" else (lambda v: f"{100 * v:.0f}%")
    bandwidth = cell(peaks.bandwidth_gbs, "{:.0f} GB/s")
    lines = [] if args.skip_latency else [
        f"# Nugget2D (r={args.ratio}) decode vs the plain LM: {args.shape} shape "
        f"({meta['layers']} layers, d={meta['hidden']}), random {meta['dtype']} weights, "
        f"{device_name}, batch 1, prompt {PROMPT}",
        "",
        f"Steady-state per generated token over {args.steps} steps (t({args.base}+{args.steps}) - "
        f"t({args.base}), best of {args.repeats}); torch {meta['torch']}, transformers "
        f"{meta['transformers']}. `{meta['command']}`",
        "",
        f"Roofline: bytes one step reads (weights once + the KV it attends to, "
        f"`benchmarks/roofline.py`) / {bandwidth} ({peaks.source}).",
        "",
        f"| context | nuggets | system | ms per token | roofline ms | ms / roofline | {extra} per token |",
        "|---:|---:|---|---:|---:|---:|---:|",
    ]
    for r in [] if args.skip_latency else rows:
        for s in SYSTEMS:
            if f"{s}_skipped" in r:
                lines.append(f"| {r['context']} | {r.get('nuggets', '')} | {s} | {r[f'{s}_skipped']} | | | |")
            elif f"{s}_ms" in r:
                lines.append(
                    f"| {r['context']} | {r.get('nuggets', '')} | {s} | {r[f'{s}_ms']:.2f} "
                    f"| {cell(r[f'{s}_roofline_ms'], '{:.2f}')} | {fmt_ratio(r[f'{s}_over_roofline'])} "
                    f"| {fmt(r[f'{s}_{key}'])} |")
    for r in [] if args.skip_latency else rows:
        ratios = [f"{what} {r[f'nugget2d_over_{other}']:.2f}x"
                  + (f" (aten ops {r[f'nugget2d_ops_over_{other}']:.3f}x)" if key == "ops" else "")
                  for other, what in (("hf_generate", "vs hf_generate"), ("full_static", "vs full_static"))
                  if f"nugget2d_over_{other}" in r]
        if ratios:
            lines.append(f"\nn={r['context']}: nugget2d ms per token " + ", ".join(ratios) + "  ")
    if serving:
        lines += ["", f"## Serving at {serving['context']} tokens of context, {device_name} "
                  f"(batch search, {SERVING_STEPS[1]} steps)", "",
                  f"Held besides the batch's KV: {serving['held_besides_the_batch']}. Roofline: "
                  f"batch / (weights once + batch x one row's KV, per step) at {bandwidth}.", "",
                  "| system | max batch | first OOM | tokens/s at max batch | roofline tokens/s "
                  "| share of roofline | note |", "|---|---:|---:|---:|---:|---:|---|"]
        for name in ("full_static", "nugget2d"):
            s = serving[name]
            if "skipped" in s:
                lines.append(f"| {name} | | | | | | {s['skipped']} |")
                continue
            oom = s["first_oom"] or f"none <= {s['limit']}"
            lines.append(f"| {name} | {s['max_batch']} | {oom} | {s['tokens_per_s']:.0f} "
                         f"| {cell(s['roofline_tokens_per_s'], '{:.0f}')} "
                         f"| {cell(s['share_of_roofline'], '{:.0%}')} "
                         f"| {s['stopped_early'] or ''} |")
    out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
