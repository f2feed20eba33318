"""What a lent window runs imports on the GPU image's packages alone: no Ray, MLflow,
DeepSpeed, omegaconf, datasets (the image lacks them and the window carries no room for
their ~92 MiB of wheels)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from benchmarks.gpu_check.calls import PIPELINE_MODULES
from benchmarks.gpu_check.rotation import ROTATING

REPO = Path(__file__).resolve().parents[2]
BLOCK = "import sys\nfor m in {mods!r}: sys.modules[m] = None\n"


def run_blocked(code: str) -> subprocess.CompletedProcess:
    script = BLOCK.format(mods=[*PIPELINE_MODULES, "lm_eval", "gguf"]) + code
    return subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, timeout=300)


def test_the_call_runner_and_its_own_parts_import_without_the_pipeline():
    out = run_blocked("import benchmarks.gpu_check.__main__, benchmarks.gpu_check.runner, "
                      "benchmarks.gpu_check.handoff, benchmarks.gpu_check.info, benchmarks.gpu_check.results, "
                      "benchmarks.gpu_check.summary\nprint('ok')")
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


def test_the_rotating_gpu_tests_collect_without_the_pipeline():
    core = next(p for p in ROTATING if p.name == "pytest-gpu-core")
    files = [a for a in core.argv if a.startswith("tests/")]
    out = run_blocked(f"import pytest\nsys.exit(pytest.main(['--co', '-q', '-p', 'no:cacheprovider', *{files!r}]))")
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
    assert "tests collected" in out.stdout and "error" not in out.stdout.lower()
