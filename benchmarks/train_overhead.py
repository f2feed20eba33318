"""Training throughput of a Nugget model vs the same vanilla HF model, side by side.

Both start from the same random-init tiny BART (profile=tiny architecture; Nugget with
the config defaults, i.e. feedback on and the layers below l frozen) and train on
the same batches of the same MT documents (objective ae) with the same optimiser; steps
alternate between the two models so machine load affects both alike. Reports tokens/s
(source + target tokens) and the overhead ratio vanilla/Nugget.

    python benchmarks/train_overhead.py --mt-docs ART/build_mt_docs/KEY --tokenizer ART/tokenizer/KEY/tokenizer
    python benchmarks/train_overhead.py          # synthetic documents (tests/training/fixtures.py)

Writes benchmarks/results/train_overhead.json and .md.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import tempfile
import time
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from stages.artifacts.data import MtDocuments  # noqa: E402
from stages.config import load_config  # noqa: E402
from stages.train.batches import BatchSchedule  # noqa: E402
from stages.train.nugget_task import NuggetTask  # noqa: E402


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--mt-docs", help="build_mt_docs artifact dir (default: synthetic)")
    p.add_argument("--tokenizer", help="tokenizer folder (with --mt-docs)")
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--out", default=str(REPO / "benchmarks" / "results" / "train_overhead"))
    p.add_argument("overrides", nargs="*", help="config overrides, e.g. nugget.freeze_bottom=false")
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    if args.mt_docs:
        data, tok = args.mt_docs, args.tokenizer
    else:
        from tests.training.fixtures import make_mt_artifacts

        data, tok = make_mt_artifacts(Path(tempfile.mkdtemp()), n_train=256, n_dev=16)
    cfg = load_config(["nugget.ratio=0.1", *args.overrides])
    task = NuggetTask(MtDocuments(Path(data)), str(tok), "ae", cfg.nugget, cfg.model.seq2seq, seed=0)
    train = task.load_split("train")
    from nugget_core import TinyBartSpec, build_tiny_bart

    nugget = task.build_model(None)  # tiny BART built with seed 0, then nuggified
    spec = TinyBartSpec(**dataclasses.asdict(cfg.model.seq2seq.tiny))  # the section has its fields
    vanilla = build_tiny_bart(task.tokenizer(), spec, seed=0)  # same weights, no Nugget
    models = {"vanilla_hf": vanilla, "nugget": nugget}
    opts = {k: torch.optim.Adam([q for q in m.parameters() if q.requires_grad], lr=1e-3) for k, m in models.items()}
    schedule = BatchSchedule(len(train), args.batch_size, 0, 1, 0)
    seconds = {k: 0.0 for k in models}
    tokens = 0
    for step in range(args.steps):
        batch = task.collate([train[i] for i in schedule.indices(step)], step, 0, True)
        tokens += task.n_tokens(batch)
        for name, model in models.items():
            inputs = batch if name == "nugget" else {k: v for k, v in batch.items() if k != "boundary_mask"}
            start = time.perf_counter()
            model(**inputs).loss.backward()
            opts[name].step()
            opts[name].zero_grad(set_to_none=True)
            seconds[name] += time.perf_counter() - start
    result = {
        "steps": args.steps, "batch_size": args.batch_size, "threads": args.threads, "tokens": tokens,
        "data": str(data), "overrides": args.overrides, "nugget": vars(cfg.nugget),
        "arch": vars(cfg.model.seq2seq.tiny),
        "tokens_per_s": {k: tokens / s for k, s in seconds.items()},
    }
    result["overhead_ratio"] = result["tokens_per_s"]["vanilla_hf"] / result["tokens_per_s"]["nugget"]
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps(result, indent=2) + "\n")
    tps = result["tokens_per_s"]
    out.with_suffix(".md").write_text(
        "| model | tokens/s |\n|---|---|\n"
        + "".join(f"| {k} | {v:.0f} |\n" for k, v in tps.items())
        + f"\noverhead ratio (vanilla / nugget): {result['overhead_ratio']:.3f}; "
        f"{args.steps} steps x batch {args.batch_size}, {args.threads} thread(s), data {data}, "
        f"overrides {args.overrides}\n"
    )
    print(out.with_suffix(".md").read_text())


if __name__ == "__main__":
    main()
