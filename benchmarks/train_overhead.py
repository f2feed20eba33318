"""Training throughput of a Nugget model vs the same vanilla HF model, side by side.

Both start from the same random-init BART (Nugget with the config defaults, i.e. feedback
on and the layers below l frozen) and train on the same batches with the same optimiser;
steps alternate between the two models so machine load affects both alike. Reports
tokens/s (source + target tokens), the overhead ratio vanilla/Nugget tokens/s (= Nugget's
step time over vanilla's), and beside each model its FLOP roofline
(`benchmarks.roofline.seq2seq_step_work` of every batch's shape over the peak dense FLOP/s
of the device table or ``--peak-tflops``; unknown otherwise) and measured / roofline.

``--shape pipeline`` (default): the pipeline's ``profile=tiny`` BART on MT documents
(objective ae, through `stages.nugget.nugget_task`; needs the pipeline's config stack).
``--shape bart-large`` (d 1024, 12 + 12 layers, 16 heads, ffn 4096, vocab 50265, tied
LM head, as facebook/bart-large) or ``bart-tiny`` (its CPU test shape): random token
batches of ``--source`` / ``--target`` tokens (AE: the target has the source's length by
default), only torch / transformers and `nugget_core`; ``--device cuda`` trains under bf16
autocast (``--dtype``).

    python benchmarks/train_overhead.py --mt-docs ART/build_mt_docs/KEY --tokenizer ART/tokenizer/KEY/tokenizer
    python benchmarks/train_overhead.py          # synthetic documents (tests/training/fixtures.py)
    python benchmarks/train_overhead.py --shape bart-large --device cuda --batch-size 16 --steps 20

``--results-dir`` / ``--max-seconds`` as in `benchmarks.run_options` (past the cap no new
step starts; both models have run the same steps). Writes <--results-dir>/train_overhead
(``--shape pipeline``) or train_overhead_<shape>_<device>, .json and .md; ``--out`` names
the file stem instead.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.roofline import Seq2SeqShape, flops, fmt_ratio, ratio, seq2seq_step_work  # noqa: E402
from benchmarks.run_options import Deadline, add_run_options, peaks_of  # noqa: E402
from stages.common.device import autocast, synchronize  # noqa: E402

#: synthetic BART shapes (BartConfig fields); bart-large as facebook/bart-large
SHAPES = {
    "bart-large": dict(d_model=1024, encoder_layers=12, decoder_layers=12, encoder_attention_heads=16,
                       decoder_attention_heads=16, encoder_ffn_dim=4096, decoder_ffn_dim=4096,
                       vocab_size=50265),
    "bart-tiny": dict(d_model=32, encoder_layers=4, decoder_layers=4, encoder_attention_heads=2,
                      decoder_attention_heads=2, encoder_ffn_dim=64, decoder_ffn_dim=64, vocab_size=512),
}
Batches = Callable[[int], dict[str, torch.Tensor]]


def pipeline_models(args) -> tuple[dict[str, torch.nn.Module], Batches, Callable[[dict], int], dict]:
    """The pipeline's tiny BART, plain and nuggified, and its MT-document batches."""
    from nugget_core import TinyBartSpec, build_tiny_bart
    from stages.config import load_config
    from stages.nugget.artifacts.data import MtDocuments
    from stages.nugget.nugget_task import NuggetTask
    from stages.training.batches import BatchSchedule

    if args.mt_docs:
        data, tok = args.mt_docs, args.tokenizer
    else:
        from tests.training.fixtures import make_mt_artifacts

        data, tok = make_mt_artifacts(Path(tempfile.mkdtemp()), n_train=256, n_dev=16)
    cfg = load_config(["nugget.ratio=0.1", *args.overrides])
    task = NuggetTask(MtDocuments(Path(data)), str(tok), "ae", cfg.nugget, cfg.model.seq2seq, seed=0)
    train = task.load_split("train")
    nugget = task.build_model(None)  # tiny BART built with seed 0, then nuggified
    spec = TinyBartSpec(**dataclasses.asdict(cfg.model.seq2seq.tiny))  # the section has its fields
    vanilla = build_tiny_bart(task.tokenizer(), spec, seed=0)  # same weights, no Nugget
    schedule = BatchSchedule(len(train), args.batch_size, 0, 1, 0)

    def batches(step: int) -> dict[str, torch.Tensor]:
        return task.collate([train[i] for i in schedule.indices(step)], step, 0, True)

    meta = {"data": str(data), "overrides": args.overrides, "nugget": vars(cfg.nugget),
            "arch": vars(cfg.model.seq2seq.tiny)}
    return {"vanilla_hf": vanilla, "nugget": nugget}, batches, task.n_tokens, meta


def synthetic_models(args) -> tuple[dict[str, torch.nn.Module], Batches, Callable[[dict], int], dict]:
    """A random-init BART of ``args.shape``, plain and nuggified (same weights), and
    random token batches."""
    from transformers import BartConfig, BartForConditionalGeneration

    from nugget_core import NuggetConfig, get_nugget_model

    target = args.target or args.source
    config = BartConfig(**SHAPES[args.shape], max_position_embeddings=max(args.source, target) + 2,
                        dropout=0.0, attention_dropout=0.0, activation_dropout=0.0,
                        pad_token_id=1, bos_token_id=0, eos_token_id=2, decoder_start_token_id=2)
    config._attn_implementation = "sdpa"

    def build() -> BartForConditionalGeneration:
        torch.manual_seed(0)
        return BartForConditionalGeneration(config)

    nugget_config = NuggetConfig(ratio=args.ratio)
    models = {"vanilla_hf": build(), "nugget": get_nugget_model(build(), nugget_config)}

    def batches(step: int) -> dict[str, torch.Tensor]:
        gen = torch.Generator().manual_seed(step)
        ids = torch.randint(4, config.vocab_size, (args.batch_size, args.source), generator=gen)
        labels = ids[:, :target].clone() if target <= args.source else torch.randint(
            4, config.vocab_size, (args.batch_size, target), generator=gen)
        return {"input_ids": ids, "attention_mask": torch.ones_like(ids), "labels": labels}

    def n_tokens(batch: dict[str, torch.Tensor]) -> int:
        return int(batch["attention_mask"].sum()) + int((batch["labels"] != -100).sum())

    meta = {"data": f"random tokens, source {args.source}, target {target}",
            "nugget": dataclasses.asdict(nugget_config), "arch": SHAPES[args.shape]}
    return models, batches, n_tokens, meta


def step_flops(model: torch.nn.Module, name: str, batch: dict[str, torch.Tensor], nugget) -> float:
    """Roofline FLOPs of one training step of ``model`` on ``batch`` (its padded shape)."""
    from nugget_core.nuggets import nugget_counts

    c = (model.base_model if name == "nugget" else model).config
    shape = Seq2SeqShape(c.d_model, c.encoder_layers, c.decoder_layers, c.encoder_attention_heads,
                         c.encoder_ffn_dim, c.vocab_size)
    rows, source = batch["input_ids"].shape
    kw = dict(batch=rows, source=source, target=batch["labels"].shape[1])
    if name != "nugget":
        return flops(seq2seq_step_work(shape, **kw))
    k = int(nugget_counts(torch.ones(1, source), nugget.ratio)[0])
    return flops(seq2seq_step_work(shape, **kw, nuggets=k,
                                   frozen_layers=nugget.scorer_layer if nugget.freeze_bottom else 0,
                                   scorer_hidden=nugget.scorer_hidden))


def train_steps(models: dict[str, torch.nn.Module], batches: Batches, n_tokens: Callable[[dict], int],
                steps: int, device: torch.device, precision: str, deadline: Deadline) -> Iterator[dict]:
    """Alternate one step of each model per batch; yields per step its batch, tokens and
    each model's seconds. Stops early (no new step) past the deadline."""
    opts = {k: torch.optim.Adam([q for q in m.parameters() if q.requires_grad], lr=1e-3)
            for k, m in models.items()}
    for step in range(steps):
        if deadline.expired():
            return
        batch = {k: v.to(device) for k, v in batches(step).items()}
        seconds = {}
        for name, model in models.items():
            inputs = batch if name == "nugget" else {k: v for k, v in batch.items() if k != "boundary_mask"}
            synchronize(device)
            start = time.perf_counter()
            with autocast(device, precision):
                loss = model(**inputs).loss
            loss.backward()
            opts[name].step()
            opts[name].zero_grad(set_to_none=True)
            synchronize(device)
            seconds[name] = time.perf_counter() - start
        yield {"batch": batch, "tokens": n_tokens(batch), "seconds": seconds}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--shape", default="pipeline", choices=["pipeline", *SHAPES])
    p.add_argument("--mt-docs", help="build_mt_docs artifact dir (--shape pipeline; default: synthetic)")
    p.add_argument("--tokenizer", help="tokenizer folder (with --mt-docs)")
    p.add_argument("--source", type=int, default=128, help="source tokens (synthetic shapes)")
    p.add_argument("--target", type=int, default=None, help="target tokens (default: --source, AE)")
    p.add_argument("--ratio", type=float, default=0.1, help="Nugget ratio (synthetic shapes)")
    p.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    p.add_argument("--dtype", default=None, choices=["fp32", "bf16"],
                   help="autocast precision (default: bf16 on cuda, fp32 on cpu)")
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--out", default=None, help="results file stem (default: see the docstring)")
    p.add_argument("overrides", nargs="*", help="config overrides (--shape pipeline), e.g. nugget.freeze_bottom=false")
    add_run_options(p)
    args = p.parse_args()
    deadline = Deadline(args.max_seconds)
    if args.shape != "pipeline" and (args.mt_docs or args.overrides):
        raise SystemExit("--mt-docs and config overrides belong to --shape pipeline")
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise SystemExit("--device cuda: torch sees no CUDA device")
    precision = args.dtype or ("bf16" if device.type == "cuda" else "fp32")
    torch.set_num_threads(args.threads)
    models, batches, n_tokens, meta = (pipeline_models if args.shape == "pipeline" else synthetic_models)(args)
    models = {k: m.to(device).train() for k, m in models.items()}
    device_name = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
    peaks = peaks_of(args, device_name)
    seconds = {k: 0.0 for k in models}
    roof = {k: 0.0 for k in models}
    tokens = steps_run = 0
    for done in train_steps(models, batches, n_tokens, args.steps, device, precision, deadline):
        steps_run += 1
        tokens += done["tokens"]
        for name, model in models.items():
            seconds[name] += done["seconds"][name]
            roof[name] += step_flops(model, name, done["batch"], model.config if name == "nugget" else None)
    result = {
        "shape": args.shape, "device": device.type, "device_name": device_name, "precision": precision,
        "steps": args.steps, "steps_run": steps_run, "batch_size": args.batch_size, "threads": args.threads,
        "tokens": tokens, **meta, "peak_tflops": peaks.peak_tflops, "peaks_source": peaks.source,
        "command": " ".join(["python benchmarks/train_overhead.py", *sys.argv[1:]]),
    }
    if steps_run < args.steps:
        result["stopped_early"] = f"--max-seconds {args.max_seconds:g}: {steps_run} of {args.steps} steps run"
    if steps_run:
        result["tokens_per_s"] = {k: tokens / s for k, s in seconds.items()}
        result["step_s"] = {k: s / steps_run for k, s in seconds.items()}
        result["roofline_flops_per_step"] = {k: f / steps_run for k, f in roof.items()}
        result["roofline_s"] = {k: peaks.seconds_for_flops(f / steps_run) for k, f in roof.items()}
        result["over_roofline"] = {k: ratio(result["step_s"][k], result["roofline_s"][k]) for k in models}
        result["overhead_ratio"] = result["tokens_per_s"]["vanilla_hf"] / result["tokens_per_s"]["nugget"]
    stem = args.out or ("train_overhead" if args.shape == "pipeline" else f"train_overhead_{args.shape}_{device.type}")
    out = args.results_dir / stem if args.out is None else Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps(result, indent=2, default=str) + "\n")
    if not steps_run:
        text = f"skipped: {result['stopped_early']}\n"
    else:
        text = ("| model | tokens/s | s/step | roofline s/step | s/step / roofline |\n|---|---:|---:|---:|---:|\n"
                + "".join(f"| {k} | {result['tokens_per_s'][k]:.0f} | {result['step_s'][k]:.4f} | "
                          + ("unknown" if result["roofline_s"][k] is None else f"{result['roofline_s'][k]:.4f}")
                          + f" | {fmt_ratio(result['over_roofline'][k])} |\n" for k in models)
                + f"\noverhead ratio (vanilla / nugget tokens/s = nugget / vanilla step time): "
                f"{result['overhead_ratio']:.3f}; {steps_run} steps x batch {args.batch_size}, "
                f"{args.shape}, {precision} on {device_name}, {args.threads} thread(s), data {result['data']}, "
                f"overrides {args.overrides}; roofline: the step's FLOPs (`benchmarks/roofline.py`) / "
                + ("unknown" if peaks.peak_tflops is None else f"{peaks.peak_tflops:g} TFLOP/s")
                + f" ({peaks.source}). `{result['command']}`"
                + (f"\n\n{result['stopped_early']}" if "stopped_early" in result else "") + "\n")
    out.with_suffix(".md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
