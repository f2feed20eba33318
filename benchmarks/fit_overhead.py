"""The fixed cost of one Ray Train fit, phase by phase (what step counts cannot remove).

Fits the tiny Nugget task (profile=tiny model, synthetic MT documents from
tests/training/fixtures.py) through `stages.training.launch.fit` with ``--steps`` steps,
``--fits`` times on one private local Ray, and splits each fit's wall time into: before
the worker's training loop starts (TrainController actor, worker group, process group),
the loop itself (data, model, steps, dev evaluation, checkpoint export), and after it
(teardown, checkpoint download). Run it on an otherwise idle machine.

    python benchmarks/fit_overhead.py [--steps 1] [--fits 3] [--cpus 2]

Writes benchmarks/results/fit_overhead.json and .md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
RESULTS = REPO / "benchmarks" / "results"


def timed_loop(config: dict) -> None:
    """The real loop, with wall-clock marks written where the driver can read them."""
    from stages.training.loop import train_loop_per_worker

    start = time.time()
    train_loop_per_worker(config)
    Path(config["marks"]).write_text(json.dumps({"loop_start": start, "loop_end": time.time()}))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps", type=int, default=1)
    p.add_argument("--fits", type=int, default=3)
    p.add_argument("--cpus", type=int, default=2)
    args = p.parse_args()
    os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    import ray

    import stages.training.launch as launch
    from stages.config import load_config
    from stages.nugget.artifacts.data import MtDocuments
    from stages.nugget.nugget_task import NuggetTask
    from tests.training.fixtures import make_mt_artifacts

    ray.init(address="local", num_cpus=args.cpus, include_dashboard=False,
             runtime_env={"env_vars": {"PYTHONPATH": str(REPO)}})
    rows = []
    with tempfile.TemporaryDirectory(prefix="fit-overhead-") as tmp:
        data, tok = make_mt_artifacts(Path(tmp))
        n = args.steps
        cfg = load_config([f"train.nugget.max_steps={n}", f"train.nugget.eval_every={n}",
                           f"train.nugget.checkpoint_every={n}", "train.nugget.dev_examples=16"])
        job = cfg.train.nugget
        task = NuggetTask(MtDocuments(data), str(tok), job.objective, cfg.nugget, cfg.model.seq2seq, seed=0)
        marks = Path(tmp) / "marks.json"
        original = launch.train_loop_per_worker
        launch.train_loop_per_worker = lambda config: timed_loop({**config, "marks": str(marks)})
        try:
            for i in range(args.fits):
                begin = time.time()
                launch.fit(task, job, f"{tmp}/storage", f"fit{i}", seed=0, download_to=f"{tmp}/final{i}")
                end = time.time()
                m = json.loads(marks.read_text())
                rows.append({"fit": i, "total_s": end - begin, "before_loop_s": m["loop_start"] - begin,
                             "loop_s": m["loop_end"] - m["loop_start"], "after_loop_s": end - m["loop_end"]})
                print(f"fit {i}: {rows[-1]['total_s']:.1f} s = {rows[-1]['before_loop_s']:.1f} before the loop "
                      f"+ {rows[-1]['loop_s']:.1f} loop + {rows[-1]['after_loop_s']:.1f} after", flush=True)
        finally:
            launch.train_loop_per_worker = original
    ray.shutdown()
    meta = {"steps": args.steps, "ray_cpus": args.cpus, "machine": f"{platform.machine()} {os.cpu_count()} cpus",
            "python": platform.python_version(), "torch": __import__("torch").__version__,
            "ray": ray.__version__}
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "fit_overhead.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=2) + "\n")
    lines = ["# Fixed cost of one Ray Train fit", "", f"{meta}", "",
             "| fit | total s | before the loop s | loop s | after s |", "|---|---|---|---|---|"]
    lines += [f"| {r['fit']} | {r['total_s']:.1f} | {r['before_loop_s']:.1f} | {r['loop_s']:.1f} | "
              f"{r['after_loop_s']:.1f} |" for r in rows]
    (RESULTS / "fit_overhead.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
