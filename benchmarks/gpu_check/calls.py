"""The two back-to-back calls of a lent GPU window and the parts each one runs.

**Call 1, the Nugget headline** (nothing installed: the image's torch, transformers and
sacrebleu): Nugget autoencoding at r = 0.05, 0.1, 0.25 (`benchmarks.headline ae`), while
a background part leaves carry 1's half of SmolLM2 and the burst's data in ``/tmp`` for
call 2. **Call 2, the Nugget2D headline, then the rotation**: the real SmolLM2 GGUF is
reassembled from the half call 1 left and the half carry 2 brings, `gguf` installed from
carry 2, Nugget2D vs ICAE autoencoding (`benchmarks.headline nugget2d`); the time left goes
to the rotating checks (`rotation`): CUDA correctness and the speed benchmarks, whichever
ran longest ago first, so successive windows cover them all.

`OWN_MACHINE` holds what needs the pipeline's own wheels (Ray, MLflow, DeepSpeed: ~92 MiB,
docs/performance.md) and so never fits a 15-minute window beside the headline: it runs
with ``make gpu-check`` on a CUDA machine with the project installed (``run --all``).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from benchmarks.gpu_check.parts import Call, Part
from benchmarks.gpu_check.rotation import ROTATING, Rotation, choose

PACK_DIR = ".gpu-check"  # ignored; its carryN folders travel with the calls
CARRIES = tuple(f"{PACK_DIR}/carry{n}" for n in (1, 2))
SITE = "/tmp/site"  # carry N installs into SITE/carryN: one --target per carry (pip replaces, never merges, folders)
WORK = "/tmp/gpu-check"  # each call's logs and results, packed into $OUT at its end
DATA = "headline-data"  # in carry 1, stashed in {scratch} for call 2
GGUF = "smollm2.gguf"  # reassembled in {scratch}; its parts: GGUF.part1 (carry 1), GGUF.part2 (carry 2)
PIPELINE_MODULES = ("ray", "mlflow", "deepspeed", "omegaconf", "datasets", "bm25s", "rouge_score", "nltk")
HEADLINE_NEEDS = ("torch", "transformers", "sacrebleu", "numpy")

GPU_INFO = Part("gpu-info", ("{py}", "-m", "benchmarks.gpu_check", "gpu-info", "--out", "{dir}", "--device", "{device}"), 15,
                "the GPU, driver, torch / transformers versions, the commit (env.json)", needs=("torch",))

STASH = Part("stash", ("{py}", "-m", "benchmarks.gpu_check", "stash", "--carry", "{carry1}", "--scratch", "{scratch}"),
             30, f"leave carry 1's half of SmolLM2 and {DATA} in /tmp for call 2", background=True,
             needs_paths=("{carry1}/manifest.json",))

AE = Part("headline-ae", ("{py}", "-m", "benchmarks.headline", "ae", "--data", f"{{carry1}}/{DATA}", "--out", "{dir}",
                          "--size", "{size}", "--device", "{device}", "--max-seconds", "{max_seconds}"), 265,
          "Nugget AE (Nugget fig. 4, 5): from-scratch BART, bf16, r = 0.1, 0.05, 0.25 for a fixed budget each; "
          "beam-search BLEU on held-out documents, document-level intervals; nugget token statistics at r = 0.1",
          needs=HEADLINE_NEEDS, needs_paths=(f"{{carry1}}/{DATA}",))

ASSEMBLE = Part("assemble", ("{py}", "-m", "benchmarks.gpu_check", "assemble", "--carry", "{carry2}",
                             "--scratch", "{scratch}", "--site", "{site}"), 30,
                f"{GGUF} from call 1's half in /tmp and carry 2's half, sha256 checked; gguf installed from carry 2",
                needs_paths=("{carry2}/manifest.json",))

NUGGET2D = Part("headline-2d", ("{py}", "-m", "benchmarks.headline", "nugget2d", "--gguf", f"{{scratch}}/{GGUF}",
                                "--data", f"{{scratch}}/{DATA}", "--out", "{dir}", "--size", "{size}",
                                "--device", "{device}", "--max-seconds", "{max_seconds}"), 190,
                "Nugget2D vs ICAE autoencoding (Nugget2D §4) on the real SmolLM2-135M: same budget, same ratio; "
                "BLEU with the paired document-level interval",
                needs=(*HEADLINE_NEEDS, "peft", "gguf"), needs_paths=(f"{{scratch}}/{GGUF}", f"{{scratch}}/{DATA}"))

CALL1_TIMEOUT_S = 300
TIMEOUT_ALL_S = 900  # run --all on a user's own machine: no device limit; the rotating checks' limits fit
CALL2_TIMEOUT_S = 290

CALL1 = Call(1, "the Nugget headline (image packages only); SmolLM2's first half stashed for call 2", (CARRIES[0],),
             CALL1_TIMEOUT_S, (GPU_INFO, STASH, AE))


def call2(rotation: Rotation) -> Call:
    """Call 2 with the rotating parts chosen for this window at its end."""
    fixed = (replace(GPU_INFO, background=True), ASSEMBLE, NUGGET2D)
    return Call(2, "the Nugget2D headline on the real SmolLM2, then the rotating checks", (CARRIES[1],),
                CALL2_TIMEOUT_S, (*fixed, *(r.part for r in rotation.chosen)))


def rotation_slot_s() -> int:
    """The seconds call 2 has for rotating checks after its fixed parts."""
    probe = Call(2, "", (), CALL2_TIMEOUT_S, ())
    return probe.budget_s - ASSEMBLE.seconds - NUGGET2D.seconds


def window(results: Path | None = None) -> tuple[tuple[Call, ...], Rotation]:
    """The lent window's calls and the rotation behind call 2's choice (newest committed results)."""
    rotation = choose(ROTATING, rotation_slot_s(), results)
    return (CALL1, call2(rotation)), rotation


OWN_MACHINE = Call(3, "own CUDA machine only: what needs the pipeline's wheels", (), TIMEOUT_ALL_S, (
    Part("pytest-gpu-pipeline", ("{py}", "-m", "pytest", "-m", "gpu", "tests/gpu/test_gpu_stages.py",
                                 "tests/gpu/test_gpu_training.py", "-rA", "-p", "no:cacheprovider",
                                 "--junitxml", "{dir}/junit.xml"), 300,
         "the `gpu` tests of the stages and Ray Train (NCCL, DeepSpeed ZeRO-2)", needs=("pytest", *PIPELINE_MODULES)),
    Part("gpu1", ("{py}", "-m", "benchmarks.gpu_check", "gpu1", "--sources", "{sources}", "--out", "{dir}",
                  "--max-seconds", "{max_seconds}"), 290,
         "profile=gpu1, tens of steps per training job, every stage: wall time and peak GPU memory per stage",
         needs=PIPELINE_MODULES, needs_paths=("{sources}",)),
))


def all_calls(results: Path | None = None) -> tuple[Call, ...]:
    """Every call ``run --all`` runs on a user's own CUDA machine: the window's two with
    every rotating check (not only this window's), then `OWN_MACHINE`."""
    (first, second), _ = window(results)
    fixed = tuple(p for p in second.parts if p.name in {"gpu-info", ASSEMBLE.name, NUGGET2D.name})
    everything = Call(2, second.title, second.carry, TIMEOUT_ALL_S, (*fixed, *ROTATING))
    return first, everything, OWN_MACHINE


def get_call(number: int, results: Path | None = None) -> Call:
    calls, _ = window(results)
    for call in calls:
        if call.number == number:
            return call
    raise SystemExit(f"gpu-check: no call {number} in the window; its calls are {[c.number for c in calls]}")


def select_parts(call: Call, only: list[str] | None = None) -> tuple[Part, ...]:
    """The parts to run: ``only`` these names (to rerun one), else all of them."""
    unknown = sorted(set(only or []) - {p.name for p in call.parts})
    if unknown:
        raise SystemExit(f"gpu-check: call {call.number} has no part {unknown}; its parts: "
                         f"{[p.name for p in call.parts]}")
    return tuple(p for p in call.parts if not only or p.name in only)
