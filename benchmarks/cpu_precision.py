"""fp32 against bf16 on this CPU, side by side in one process: what ``precision=auto`` decides.

Not a test. Each row is measured in both precisions (or all three training modes), the modes
interleaved over ``--repeats`` rounds (so a slow spell of the machine hits all of them), and the
median of each is reported with the ratio. The rows:

- ``linear``: ``F.linear`` at SmolLM2-135M's MLP shape (512 x 576 -> 1536), GFLOP/s;
- ``matmul``: a 1024 x 1024 product, GFLOP/s;
- ``grad_input``: the product a backward pass takes through a frozen weight,
  ``grad[512, 1536] @ W[1536, 576]`` (W not transposed), GFLOP/s: where a CPU without bf16
  matrix units falls to a slow reference kernel;
- ``lm_forward``: SmolLM2-135M's forward on 4 x 128 tokens, weights in fp32 vs bf16, tokens/s,
  and how far bf16 moves the mean NLL of those tokens;
- ``nugget2d_train``: one optimiser step of the Nugget2D compressor (fine-tune objective, LoRA on
  the frozen SmolLM2) on the same batches, tokens/s, in three modes: ``fp32``; ``autocast`` (fp32
  weights, bf16 autocast: every frozen weight re-cast on each matmul); ``bf16`` (what
  ``precision=bf16`` trains with on DDP: frozen weights held in bf16, trained ones and Adam's
  state fp32, bf16 autocast; `stages.common.device.FrozenInLowPrecision`);
- ``nugget_train``: the same three modes for a from-scratch tiny BART Nugget autoencoder
  (profile=tiny's shape, every weight trained but the frozen bottom);
- ``lm_generate``: greedy decoding with SmolLM2 (HF ``generate``, batch 4, 64-token prompts, 32 new
  tokens), weights in fp32 vs bf16, generated tokens/s.

The machine's bf16 instructions (`stages.config.precision.cpu_bf16`) name the results file:
``cpu_precision_<bf16 flags or "no-bf16">.json`` / ``.md`` under ``--results-dir``.

    python benchmarks/cpu_precision.py --lm ~/nugget-artifacts/prepare_lm/<key>/model
    python benchmarks/cpu_precision.py --quick      # tiny random models: the code path only

``--lm`` is a local HF folder of SmolLM2 (profile=tiny's ``prepare_lm`` output); without it the
newest one under ``$NUGGET_ARTIFACT_ROOT/prepare_lm`` is taken.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from benchmarks.run_options import RESULTS  # noqa: E402
from stages.common.device import FrozenInLowPrecision  # noqa: E402
from stages.config.precision import BF16_FLAGS, bf16_support, read_cpu_flags  # noqa: E402

TRAIN_MODES = ("fp32", "autocast", "bf16")


def _seconds(fn: Callable[[], Any], n: int) -> float:
    """Seconds per call of ``fn`` over ``n`` calls (after one warm-up call)."""
    fn()
    start = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - start) / n


def interleaved(make: dict[str, Callable[[], Callable[[], Any]]], repeats: int, calls: int) -> dict[str, list[float]]:
    """Seconds per call of each mode's function, the modes taking turns for ``repeats`` rounds."""
    fns = {mode: build() for mode, build in make.items()}
    times: dict[str, list[float]] = {mode: [] for mode in fns}
    for _ in range(repeats):
        for mode, fn in fns.items():
            times[mode].append(_seconds(fn, calls))
    return times


def row(name: str, unit: str, work: float, times: dict[str, list[float]], note: str = "",
        extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """One result row: per mode the median seconds and ``work / seconds`` in ``unit``; the ratio
    of each mode's speed to fp32's."""
    medians = {mode: statistics.median(t) for mode, t in times.items()}
    speed = {mode: work / s for mode, s in medians.items()}
    return {"row": name, "unit": unit, "speed": speed, "seconds": times,
            "ratio_to_fp32": {mode: speed[mode] / speed["fp32"] for mode in speed}, "note": note, **(extra or {})}


def matmul_rows(repeats: int, quick: bool) -> list[dict[str, Any]]:
    m, k, n = (64, 64, 128) if quick else (512, 576, 1536)
    side = 128 if quick else 1024
    out = []
    for name, shapes, fn, flops in (
        ("linear", ((m, k), (n, k)), lambda x, w: F.linear(x, w), 2 * m * k * n),
        ("matmul", ((side, side), (side, side)), lambda a, b: a @ b, 2 * side**3),
        ("grad_input", ((m, n), (n, k)), lambda g, w: g @ w, 2 * m * k * n),
    ):
        def make(dtype: torch.dtype, shapes: Any = shapes, fn: Any = fn) -> Callable[[], Any]:
            a, b = (torch.randn(*s, dtype=dtype) for s in shapes)
            return lambda: fn(a, b)

        times = interleaved({"fp32": lambda make=make: make(torch.float32),
                             "bf16": lambda make=make: make(torch.bfloat16)}, repeats, 2)
        out.append(row(name, "GFLOP/s", flops / 1e9, times, note=f"shapes {shapes}"))
    return out


def load_lm(path: str | None, quick: bool) -> Any:
    """SmolLM2 from ``path`` (fp32), or a 2-layer random LLaMA for ``--quick``."""
    from transformers import AutoModelForCausalLM, LlamaConfig, LlamaForCausalLM

    if quick:
        torch.manual_seed(0)
        config = LlamaConfig(vocab_size=512, hidden_size=64, intermediate_size=128, num_hidden_layers=4,
                             num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256)
        return LlamaForCausalLM(config).eval()
    return AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32, attn_implementation="sdpa",
                                                trust_remote_code=False).eval()


def lm_rows(lm: Any, repeats: int, quick: bool) -> list[dict[str, Any]]:
    """Forward and greedy decoding, weights fp32 vs bf16 (two copies of the model)."""
    import copy

    vocab = lm.config.vocab_size
    batch, length = (2, 32) if quick else (4, 128)
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(100, vocab - 1, (batch, length), generator=g)
    models = {"fp32": lm, "bf16": copy.deepcopy(lm).to(torch.bfloat16)}

    def forward(dtype: str) -> Callable[[], Any]:
        model = models[dtype]
        return lambda: torch.no_grad()(lambda: model(input_ids=ids).logits)()

    times = interleaved({d: lambda d=d: forward(d) for d in models}, repeats, 1 if quick else 2)
    with torch.no_grad():
        nll = {d: float(F.cross_entropy(m(input_ids=ids).logits[:, :-1].float().flatten(0, 1), ids[:, 1:].flatten()))
               for d, m in models.items()}
    out = [row("lm_forward", "tokens/s", batch * length, times, note=f"{batch} x {length} tokens",
               extra={"mean_nll": nll, "nll_shift_bf16": nll["bf16"] - nll["fp32"]})]

    prompt = ids[:, : (16 if quick else 64)]
    new = 8 if quick else 32

    def generate(dtype: str) -> Callable[[], Any]:
        model = models[dtype]
        return lambda: model.generate(input_ids=prompt, attention_mask=torch.ones_like(prompt), do_sample=False,
                                      max_new_tokens=new, min_new_tokens=new, pad_token_id=0)

    times = interleaved({d: lambda d=d: generate(d) for d in models}, repeats, 1)
    with torch.no_grad():
        tokens = {d: generate(d)()[:, prompt.shape[1]:] for d in models}
    agree = float((tokens["fp32"] == tokens["bf16"]).float().mean())
    out.append(row("lm_generate", "generated tokens/s", prompt.shape[0] * new, times,
                   note=f"batch {prompt.shape[0]}, {prompt.shape[1]}-token prompts, {new} new tokens",
                   extra={"greedy_tokens_equal_share": agree}))
    return out


def nugget2d_train_row(lm_path: str | None, repeats: int, quick: bool) -> dict[str, Any]:
    """A Nugget2D compressor step (fine-tune objective) in the three training modes."""
    from nugget_core.nugget2d import Nugget2DConfig, Nugget2DModel
    from nugget_core.nugget2d.objectives import objective_loss, set_objective

    batch_size, doc, prompt, answer = (2, 16, 4, 8) if quick else (2, 48, 8, 16)
    g = torch.Generator().manual_seed(1)
    base = load_lm(lm_path, quick)
    vocab = base.config.vocab_size

    def part(n: int) -> tuple[torch.Tensor, torch.Tensor]:
        return torch.randint(100, vocab - 1, (batch_size, n), generator=g), torch.ones(batch_size, n, dtype=torch.long)

    (d_ids, d_mask), (p_ids, p_mask), (a_ids, a_mask) = part(doc), part(prompt), part(answer)
    batch = {"doc_ids": d_ids, "doc_mask": d_mask, "prompt_ids": p_ids, "prompt_mask": p_mask,
             "answer_ids": a_ids, "answer_mask": a_mask}
    losses: dict[str, float] = {}

    def make(mode: str) -> Callable[[], Any]:
        import copy

        torch.manual_seed(0)
        model = Nugget2DModel(copy.deepcopy(base), Nugget2DConfig(lora_rank=8 if quick else 32,
                                                                   scorer_layer=1 if quick else 3))
        params = set_objective(model, "finetune")
        FrozenInLowPrecision(model, "bf16" if mode == "bf16" else "fp32")
        model.train()
        optimizer = torch.optim.Adam(params, lr=1e-4)

        def step() -> None:
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=mode != "fp32"):
                loss = objective_loss(model, "finetune", batch).loss
            loss.backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            losses.setdefault(mode, float(loss.detach()))

        return step

    times = interleaved({m: lambda m=m: make(m) for m in TRAIN_MODES}, repeats, 1)
    return row("nugget2d_train", "tokens/s", batch_size * (doc + prompt + answer), times,
               note=f"batch {batch_size} x (doc {doc} + prompt {prompt} + answer {answer}), LoRA rank "
                    f"{8 if quick else 32}, Adam", extra={"first_loss": losses})


def nugget_train_row(repeats: int, quick: bool) -> dict[str, Any]:
    """A tiny-BART Nugget autoencoder step in the three training modes (profile=tiny's shape)."""
    from nugget_core import (
        NuggetConfig,
        TinyBartSpec,
        build_tiny_bart,
        get_nugget_model,
        train_bpe_tokenizer,
    )

    corpus = [f"Document {i} says that the quick brown fox met {i % 7} lazy dogs on day {i % 31}." for i in range(300)]
    tok = train_bpe_tokenizer(corpus, vocab_size=400 if quick else 1000)
    spec = TinyBartSpec(d_model=64, layers=4, heads=4, ffn_dim=128, max_positions=160, dropout=0.1)
    batch_size, length = (4, 32) if quick else (8, 100)
    g = torch.Generator().manual_seed(2)
    ids = torch.randint(5, len(tok), (batch_size, length), generator=g)

    def make(mode: str) -> Callable[[], Any]:
        torch.manual_seed(0)
        model = get_nugget_model(build_tiny_bart(tok, spec, seed=0), NuggetConfig(ratio=0.1, scorer_layer=3))
        FrozenInLowPrecision(model, "bf16" if mode == "bf16" else "fp32")
        model.train()
        optimizer = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=1e-3)

        def step() -> None:
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=mode != "fp32"):
                loss = model(input_ids=ids, attention_mask=torch.ones_like(ids), labels=ids).loss
            loss.backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)

        return step

    times = interleaved({m: lambda m=m: make(m) for m in TRAIN_MODES}, repeats, 2 if quick else 5)
    return row("nugget_train", "tokens/s", 2 * batch_size * length, times,
               note=f"BART d 64, 4 + 4 layers, batch {batch_size} x {length} (source + target tokens)")


def newest_prepared_lm() -> str | None:
    root = Path(os.environ.get("NUGGET_ARTIFACT_ROOT", "~/nugget-artifacts")).expanduser() / "prepare_lm"
    found = sorted(root.glob("*/model/config.json"), key=lambda p: p.stat().st_mtime)
    return str(found[-1].parent) if found else None


def markdown(result: dict[str, Any]) -> str:
    lines = [f"# fp32 vs bf16 on this CPU ({result['machine']['cpu']})", "",
             f"bf16 matrix instructions: {result['machine']['bf16']}; threads {result['machine']['threads']}; "
             f"torch {result['machine']['torch']}; medians of {result['repeats']} interleaved rounds; "
             f"{result['machine']['date']}", "",
             "| row | unit | fp32 | autocast | bf16 | bf16 / fp32 | note |", "|---|---|---:|---:|---:|---:|---|"]
    for r in result["rows"]:
        s = r["speed"]
        autocast = f"{s['autocast']:.1f}" if "autocast" in s else "-"
        lines.append(f"| {r['row']} | {r['unit']} | {s['fp32']:.1f} | {autocast} | {s['bf16']:.1f} | "
                     f"{r['ratio_to_fp32']['bf16']:.2f}x | {r['note']} |")
    for r in result["rows"]:
        if "nll_shift_bf16" in r:
            lines.append(f"\nlm_forward mean NLL: fp32 {r['mean_nll']['fp32']:.4f}, bf16 {r['mean_nll']['bf16']:.4f} "
                         f"(shift {r['nll_shift_bf16']:+.4f} nats/token)")
        if "greedy_tokens_equal_share" in r:
            lines.append(f"lm_generate: {100 * r['greedy_tokens_equal_share']:.0f}% of the greedy tokens equal in "
                         "fp32 and bf16")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lm", default=None, help="SmolLM2 HF folder (default: newest prepare_lm output)")
    parser.add_argument("--threads", type=int, default=2, help="torch threads (default 2: this project's CPUs)")
    parser.add_argument("--repeats", type=int, default=3, help="interleaved rounds per row")
    parser.add_argument("--quick", action="store_true", help="tiny random models and shapes: the code path only")
    parser.add_argument("--results-dir", type=Path, default=RESULTS)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    lm_path = None if args.quick else (args.lm or newest_prepared_lm())
    if not args.quick and lm_path is None:
        sys.exit("no SmolLM2 folder: pass --lm DIR (profile=tiny's prepare_lm output) or run `make run` first")
    flags = read_cpu_flags()
    support = bf16_support(flags)
    cpu = platform.processor() or platform.machine()
    try:
        cpu = next(line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                   if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    machine = {"cpu": cpu, "bf16": support.why, "native_bf16": support.native, "threads": args.threads,
               "torch": torch.__version__, "date": time.strftime("%Y-%m-%d"),
               "flags": sorted(f for f in (flags or ()) if f in BF16_FLAGS or f.startswith(("avx", "amx")))}
    rows = matmul_rows(args.repeats, args.quick)
    print(f"[cpu_precision] matmuls done ({machine['bf16']})", flush=True)
    lm = load_lm(lm_path, args.quick)
    rows += lm_rows(lm, args.repeats, args.quick)
    print("[cpu_precision] LM forward and decoding done", flush=True)
    rows.append(nugget2d_train_row(lm_path, args.repeats, args.quick))
    print("[cpu_precision] Nugget2D training step done", flush=True)
    rows.append(nugget_train_row(args.repeats, args.quick))
    result = {"machine": machine, "repeats": args.repeats, "quick": args.quick, "lm": lm_path, "rows": rows}
    tag = "_".join(f for f in BF16_FLAGS if f in (flags or ())) or "no-bf16"
    name = f"cpu_precision_{tag}{'_quick' if args.quick else ''}"
    args.results_dir.mkdir(parents=True, exist_ok=True)
    (args.results_dir / f"{name}.json").write_text(json.dumps(result, indent=2) + "\n")
    (args.results_dir / f"{name}.md").write_text(markdown(result))
    print(markdown(result))


if __name__ == "__main__":
    main()
