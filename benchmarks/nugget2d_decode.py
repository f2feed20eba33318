"""KV bytes and per-token decode time: Nugget2D compressor (r=0.1) vs Full, SmolLM2.

Not a test. For each context length, the document is encoded once; then ``--steps``
greedy tokens are decoded attending to (a) the k = ceil(0.1 n) nugget KVs (Nugget2D,
untrained adapters: the timing and memory do not depend on the weights) or (b) all n
KVs (Full: the same loop with every token kept and the plain LM). Both use the same
decoding loop, so the difference is the attended KV length.

    python benchmarks/nugget2d_decode.py [--keep-layers 8] [--steps 16]

Writes benchmarks/results/nugget2d_decode.json and .md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch

from nugget_core.nugget2d import Nugget2DConfig, Nugget2DModel
from nugget_core.nugget2d.generation import generate_from_context
from nugget_core.nugget2d.smollm2 import find_smollm2_package, prepare_smollm2

RESULTS = Path(__file__).parent / "results"


def _time_decode(model, context, prompt, steps, adapter) -> tuple[float, object]:
    generate_from_context(model, context, prompt, max_new_tokens=2, adapter=adapter)  # warm-up
    start = time.perf_counter()
    out = generate_from_context(model, context, prompt, max_new_tokens=steps, adapter=adapter)
    # steps tokens = 1 prompt pass + (steps - 1) cached steps; time per cached step.
    return (time.perf_counter() - start) / steps, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--contexts", type=int, nargs="+", default=[512, 1024, 2048])
    parser.add_argument("--steps", type=int, default=16)
    parser.add_argument("--keep-layers", type=int, default=None)
    parser.add_argument("--ratio", type=float, default=0.1)
    parser.add_argument(
        "--cache-dir", default=os.path.join(tempfile.gettempdir(), "nugget2d_bench")
    )
    args = parser.parse_args()
    package = find_smollm2_package()
    if package is None:
        raise SystemExit("SmolLM2 package not found (python -m stages.sources fetch smollm2)")
    layers = args.keep_layers or "all"
    folder = prepare_smollm2(package, Path(args.cache_dir) / f"smollm2-{layers}", args.keep_layers)
    model = Nugget2DModel.from_lm(folder, Nugget2DConfig(ratio=args.ratio, lora_rank=32)).eval()
    config = model.lm.config
    gen = torch.Generator().manual_seed(0)
    rows = []
    for n in args.contexts:
        doc = torch.randint(100, config.vocab_size, (1, n), generator=gen)
        prompt = torch.randint(100, config.vocab_size, (1, 8), generator=gen)
        with torch.no_grad():
            nug_ctx = model.compress(doc, ratio=args.ratio)
            full_ctx = model.compress(doc, ratio=1.0, adapter=None)
            t_nug, out_nug = _time_decode(model, nug_ctx, prompt, args.steps, "decoder")
            t_full, out_full = _time_decode(model, full_ctx, prompt, args.steps, None)
        rows.append(
            {
                "context": n,
                "nugget_positions": nug_ctx.kv.length,
                "nugget_kv_bytes": nug_ctx.nbytes(),
                "full_kv_bytes": full_ctx.nbytes(),
                "kv_ratio": nug_ctx.nbytes() / full_ctx.nbytes(),
                "nugget_ms_per_token": 1000 * t_nug,
                "full_ms_per_token": 1000 * t_full,
                "speedup": t_full / t_nug,
            }
        )
        print(rows[-1], flush=True)
    meta = {
        "model": "SmolLM2-135M-Instruct (GGUF Q4_1 dequantised to fp32)",
        "layers": config.num_hidden_layers,
        "ratio": args.ratio,
        "decode_steps": args.steps,
        "threads": torch.get_num_threads(),
        "machine": f"{platform.machine()} {os.cpu_count()} cpus (shared)",
        "torch": torch.__version__,
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "nugget2d_decode.json").write_text(
        json.dumps({"meta": meta, "rows": rows}, indent=2)
    )
    lines = [
        f"# Nugget2D (r={args.ratio}) vs Full decode, {meta['model']}, {meta['layers']} layers, "
        f"fp32, CPU ({meta['machine']}, {meta['threads']} threads), {args.steps} greedy steps",
        "",
        "| context | nuggets | Nugget2D KV | Full KV | KV ratio | Nugget2D ms/token | Full ms/token | speed-up |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['context']} | {r['nugget_positions']} | {r['nugget_kv_bytes'] / 2**20:.2f} MiB "
            f"| {r['full_kv_bytes'] / 2**20:.2f} MiB | {r['kv_ratio']:.3f} "
            f"| {r['nugget_ms_per_token']:.1f} | {r['full_ms_per_token']:.1f} | {r['speedup']:.2f}x |"
        )
    (RESULTS / "nugget2d_decode.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
