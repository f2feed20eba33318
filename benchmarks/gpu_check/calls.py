"""The three back-to-back calls of a GPU check and the parts each one runs.

Call 1 installs carry 1 in the background while the benchmarks run (they need only what
the GPU image has: torch, transformers, peft and this repository), call 2 installs carry 2
and runs the `gpu` tests, call 3 unpacks the offline sources, builds the SmolLM2 stand-in
and runs a short ``profile=gpu1``. To add a GPU-only check, append a `Part` to a call's
list: the plan re-checks that the parts still fit the call's budget.
"""

from __future__ import annotations

from benchmarks.gpu_check.parts import Call, Part

PACK_DIR = ".gpu-check"  # ignored; its carryN folders travel with the calls
CARRIES = tuple(f"{PACK_DIR}/carry{n}" for n in (1, 2, 3))
SITE = "/tmp/site"  # carry N installs into SITE/carryN: one --target per carry (pip replaces, never merges, folders)
WORK = "/tmp/gpu-check"  # each call's logs and results, packed into $OUT at its end
STANDIN_CONFIG = "smollm2-standin"  # inside carry 3: SmolLM2's config and tokenizer, no weights
PIPELINE_MODULES = ("ray", "mlflow", "deepspeed", "omegaconf", "datasets", "bm25s", "rouge_score", "nltk")

GPU_INFO = Part("gpu-info", ("{py}", "-m", "benchmarks.gpu_check", "gpu-info", "--out", "{dir}"), 20,
                "the GPU, driver, torch / transformers versions (env.json)", needs=("torch",))


def install(n: int, seconds: int, background: bool = False) -> Part:
    return Part(f"install-carry{n}",
                ("{py}", "-m", "benchmarks.gpu_check", "install", "--carry", f"{{repo}}/{CARRIES[n - 1]}",
                 "--site", "{site}", "--sources", "{sources}"),
                seconds, f"pip install carry {n}'s wheels into {SITE}/carry{n}; unpack its sources",
                needs_paths=(f"{{repo}}/{CARRIES[n - 1]}",), background=background, nice=10 if background else 0,
                install=True)


def bench(name: str, script: str, args: str, seconds: int, what: str) -> Part:
    """A benchmark script: its results into the part's folder, stopping in time (--max-seconds)."""
    return Part(name, ("{py}", f"benchmarks/{script}", *args.split(), "--results-dir", "{dir}",
                       "--max-seconds", "{max_seconds}"), seconds, what, needs=("torch", "transformers", "peft"))


LLAMA7B = "--device cuda --shape llama2-7b"
TRAIN_7B = "--doc 1024 --prompt 16 --answer 128 --batch 2 --steps 8"

CALL1 = Call(1, "benchmarks (image packages only), carry 1 installing beside them", (CARRIES[0],), 440, (
    GPU_INFO,
    install(1, 300, background=True),
    bench("decode", "nugget2d_decode.py", f"{LLAMA7B} --contexts 4096 32768 --steps 48", 140,
          "decode ms/token at the 7B shape, 4k and 32k: Nugget2D vs Full (same static decoder) vs HF generate"),
    bench("serving", "nugget2d_decode.py", f"{LLAMA7B} --contexts 32768 --max-batch --skip-latency", 90,
          "largest batch and tokens/s at 32k context, Nugget2D vs Full"),
    bench("train-7b", "nugget2d_train_overhead.py", f"{LLAMA7B} {TRAIN_7B} --checkpointing both", 100,
          "training step at the 7B shape: joint, two-pass, Full FT, with and without activation checkpointing"),
    bench("train-bart-large", "train_overhead.py", "--device cuda --shape bart-large", 50,
          "Nugget vs vanilla BART-large training step, same batches"),
))

CALL2 = Call(2, "the `gpu` tests", (CARRIES[1],), 440, (
    GPU_INFO,
    install(2, 120),
    Part("pytest-gpu", ("{py}", "-m", "pytest", "-m", "gpu", "tests/gpu", "-rA", "-p", "no:cacheprovider",
                        "--junitxml", "{dir}/junit.xml"), 270,
         "pytest -m gpu, full output (-rA) and junit.xml", needs=("pytest", *PIPELINE_MODULES)),
))

CALL3 = Call(3, "a short profile=gpu1 of every stage, SmolLM2 stand-in", (CARRIES[2],), 470, (
    GPU_INFO,
    install(3, 60),
    Part("standin", ("{py}", "-m", "benchmarks.gpu_check", "standin", "--config-dir", f"{{repo}}/{CARRIES[2]}/{STANDIN_CONFIG}",
                     "--sources", "{sources}", "--out", "{standin}"), 40,
         "random weights of SmolLM2-135M-Instruct's exact shape, its real config and tokenizer",
         needs=("torch", "transformers")),
    Part("gpu1", ("{py}", "-m", "benchmarks.gpu_check", "gpu1", "--standin", "{standin}", "--sources", "{sources}",
                  "--out", "{dir}", "--max-seconds", "{max_seconds}"), 320,
         "profile=gpu1, tens of steps per training job, every stage: wall time and peak GPU memory per stage",
         needs=PIPELINE_MODULES, needs_paths=("{standin}/config.json", "{sources}")),
))

CALLS: tuple[Call, ...] = (CALL1, CALL2, CALL3)


def get_call(number: int) -> Call:
    for call in CALLS:
        if call.number == number:
            return call
    raise SystemExit(f"gpu-check: no call {number}; the calls are {[c.number for c in CALLS]}")


def select_parts(call: Call, only: list[str] | None = None, installed: bool = False) -> tuple[Part, ...]:
    """The parts to run: ``only`` these names (to rerun one); without the installs where
    everything is ``installed`` already (``run --all`` on a user's own machine)."""
    unknown = sorted(set(only or []) - {p.name for p in call.parts})
    if unknown:
        raise SystemExit(f"gpu-check: call {call.number} has no part {unknown}; its parts: "
                         f"{[p.name for p in call.parts]}")
    return tuple(p for p in call.parts if (not only or p.name in only) and not (installed and p.install))
