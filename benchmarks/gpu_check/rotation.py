"""The checks that share what a lent window leaves after the headline, and which go first.

A 15-minute window holds the headline burst and about a minute more, so the CUDA
correctness tests and the speed benchmarks take turns: the committed results
(``benchmarks/results/gpu/<UTC date>/call*/status.json``) say when each last ran to the
end (status ``ok``); the one that never did, or did longest ago, goes first, ties in the
order of `ROTATING` (the issue's priority: correctness before speed). Whatever fits the
slot is taken in that order; the rest wait, each with the reason. Successive windows so
cover every check, and each window's plan says which turn it is.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks.gpu_check.parts import Part

RESULTS = Path(__file__).resolve().parents[1] / "results" / "gpu"
JUNIT = ("--junitxml", "{dir}/junit.xml")


def bench(name: str, script: str, gpu: str, cpu: str, seconds: int, what: str) -> Part:
    """A benchmark script at its shortened GPU size (``gpu`` arguments) or the CPU stand-in
    of its rehearsal (``cpu``), writing into the part's folder and stopping in time."""
    return Part(name, ("{py}", f"benchmarks/{script}", "--results-dir", "{dir}", "--max-seconds", "{max_seconds}"),
                seconds, what, needs=("torch", "transformers", "peft"),
                by_size={"gpu": tuple(gpu.split()), "cpu": tuple(cpu.split())})


LLAMA7B = "--device cuda --shape llama2-7b"
CPU_SHAPE = "--device cpu --shape tiny-8l"

# the priority order (ties): correctness first, then the decode and training-step targets
ROTATING: tuple[Part, ...] = (
    Part("pytest-gpu-core", ("{py}", "-m", "pytest", "tests/gpu/test_gpu_equivalence.py",
                             "tests/gpu/test_gpu_decoding.py", "-rA", "-p", "no:cacheprovider", *JUNIT), 50,
         "the `gpu` tests that need no Ray: every token selected = the plain model (fp32, bf16 tolerance), "
         "CUDA-graph decoding, bf16 autocast gradients", needs=("pytest", "torch", "transformers", "peft"),
         by_size={"gpu": ("-m", "gpu"), "cpu": ("-m", "not gpu")}),
    bench("decode", "nugget2d_decode.py", f"{LLAMA7B} --contexts 4096 32768 --steps 24 --repeats 1",
          f"{CPU_SHAPE} --contexts 256 --steps 8 --repeats 1", 55,
          "decode ms/token at the 7B shape, 4k and 32k: Nugget2D vs Full (same static decoder) vs HF generate"),
    bench("train-7b", "nugget2d_train_overhead.py", f"{LLAMA7B} --doc 1024 --prompt 16 --answer 128 --batch 2 "
          "--steps 4", f"{CPU_SHAPE} --doc 64 --steps 2", 55,
          "training step at the 7B shape: Nugget2D joint pass vs two passes vs Full fine-tuning (LoRA)"),
    bench("serving", "nugget2d_decode.py", f"{LLAMA7B} --contexts 32768 --max-batch --skip-latency",
          f"{CPU_SHAPE} --contexts 256 --max-batch --skip-latency --batch-limit 4", 55,
          "largest batch and tokens/s at 32k context, Nugget2D vs Full"),
    bench("train-bart-large", "train_overhead.py", "--device cuda --shape bart-large --steps 10",
          "--device cpu --shape bart-tiny --steps 2 --batch-size 2", 45,
          "Nugget vs vanilla BART-large training step, same batches"),
)


@dataclass(frozen=True)
class Rotating:
    part: Part
    priority: int
    last_ok: str  # UTC date of the newest window where it ran to the end; "" never


@dataclass
class Rotation:
    slot_s: int
    chosen: list[Rotating] = field(default_factory=list)
    waiting: list[tuple[Rotating, str]] = field(default_factory=list)

    def lines(self) -> list[str]:
        out = [f"rotation: {self.slot_s} s left in call 2 after the headline; turn order = never run to the end, "
               "then longest ago (benchmarks/results/gpu/), ties by priority"]
        for r in self.chosen:
            out.append(f"  runs now:  {r.part.name:<17} {r.part.seconds:>3} s  last ok: {r.last_ok or 'never'}")
        for r, why in self.waiting:
            out.append(f"  waits:     {r.part.name:<17} {r.part.seconds:>3} s  last ok: {r.last_ok or 'never'}  ({why})")
        return out


def last_ok(results: Path | None = None) -> dict[str, str]:
    """{part name: newest UTC date it ran with status ok} over every committed window."""
    newest: dict[str, str] = {}
    root = results or RESULTS
    for status_file in sorted(root.glob("*/call*/status.json")):
        date = status_file.parent.parent.name
        try:
            records = json.loads(status_file.read_text()).get("parts", [])
        except (OSError, ValueError):
            continue
        for record in records:
            if record.get("status") == "ok" and date > newest.get(record.get("part", ""), ""):
                newest[record["part"]] = date
    return newest


def order(parts: tuple[Part, ...], results: Path | None = None) -> list[Rotating]:
    ran = last_ok(results)
    entries = [Rotating(p, i, ran.get(p.name, "")) for i, p in enumerate(parts)]
    return sorted(entries, key=lambda r: (r.last_ok, r.priority))


def choose(parts: tuple[Part, ...], slot_s: int, results: Path | None = None) -> Rotation:
    """Greedy in turn order: each check whose limit fits what is left of ``slot_s``."""
    rotation, left = Rotation(slot_s), slot_s
    for entry in order(parts, results):
        if entry.part.seconds <= left:
            rotation.chosen.append(entry)
            left -= entry.part.seconds
        else:
            rotation.waiting.append((entry, f"needs {entry.part.seconds} s, {left} s left: a later window"))
    return rotation

