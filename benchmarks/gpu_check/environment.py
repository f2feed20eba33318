"""Where a call runs: the paths its placeholders stand for, its parts' environment, and
which required modules are missing (with the call that would have installed them).

Three modes. ``device``: the lent machine, where call N installs carry N into
``SITE/carryN`` and leaves in ``/tmp`` what later calls use (the machine stays warm between
calls issued back to back; /tmp does not survive a fresh machine). ``rehearsal``: the same
two calls on this CPU at CPU sizes, every path under one temporary root (`rehearse`).
``all``: a user's own CUDA machine with the project installed (docs/gpu.md): its offline
sources are the user's own.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from benchmarks.gpu_check.calls import CARRIES, PACK_DIR, SITE, WORK

REPO = Path(__file__).resolve().parents[2]
FIND_MISSING = ("import importlib.util, sys; "
                "print(' '.join(m for m in sys.argv[1:] if importlib.util.find_spec(m) is None))")


@dataclass(frozen=True)
class RunEnvironment:
    mode: str  # "device", "rehearsal" or "all"
    repo: Path = REPO
    site: Path = Path(SITE)
    work: Path = Path(WORK) / "call"  # this call's logs and results (packed at its end)
    scratch: Path = Path(WORK)  # not returned: what call 1 leaves for call 2 (data, half of SmolLM2), the GGUF
    sources: Path = Path(WORK) / "sources"
    python: str = sys.executable

    @classmethod
    def for_mode(cls, mode: str, work: Path | None = None, root: Path | None = None) -> RunEnvironment:
        """``root`` (rehearsal): the folder standing in for the lent machine's /tmp."""
        if mode == "all":
            sources = Path(os.environ.get("NUGGET_SOURCES_DIR", "~/.cache/nugget-pipeline/sources")).expanduser()
            return cls("all", work=work or Path(WORK) / "call", sources=sources)
        if mode == "rehearsal":
            if root is None:
                raise ValueError("a rehearsal needs the root standing in for /tmp")
            return cls("rehearsal", site=root / "site", work=work or root / "gpu-check" / "call",
                       scratch=root / "gpu-check", sources=root / "gpu-check" / "sources")
        return cls("device", work=work or Path(WORK) / "call")

    @property
    def size(self) -> str:
        """The sizes parts run at: the GPU recipe, or the CPU sizes of the rehearsal."""
        return "cpu" if self.mode == "rehearsal" else "gpu"

    @property
    def site_dirs(self) -> list[Path]:
        return [self.site / Path(c).name for c in CARRIES] if self.mode != "all" else []

    def values(self, part_dir: Path, max_seconds: int) -> dict[str, str]:
        return {"py": self.python, "repo": str(self.repo), "dir": str(part_dir), "max_seconds": str(max_seconds),
                "site": str(self.site), "sources": str(self.sources), "scratch": str(self.scratch),
                "size": self.size, "device": "cpu" if self.size == "cpu" else "cuda",
                **{f"carry{n}": str(self.repo / c) for n, c in enumerate(CARRIES, 1)}}

    def env(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        env = dict(os.environ)
        paths = [str(p) for p in self.site_dirs] + [str(self.repo)]
        env["PYTHONPATH"] = os.pathsep.join(paths + [p for p in [env.get("PYTHONPATH", "")] if p])
        env["PATH"] = os.pathsep.join([str(p / "bin") for p in self.site_dirs] + [env.get("PATH", "")])
        env.update({
            "PYTHONUNBUFFERED": "1",  # a part killed at its limit still leaves its last lines in its log
            # no network there: a hub look-up would wait for its own timeout
            "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
            "NUGGET_SOURCES_DIR": str(self.sources),
            "RAY_DISABLE_USAGE_STATS": "1", "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",
            "RAY_TRAIN_ENABLE_PREEMPTION_WATCHER": "0", "MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR": "false",
        })
        env.setdefault("RAY_AUTH_MODE", "disabled")  # a private Ray on loopback, as make test's
        env.update(extra or {})
        return env

    def missing_modules(self, modules: tuple[str, ...], env: dict[str, str]) -> list[str]:
        if not modules:
            return []
        out = subprocess.run([self.python, "-c", FIND_MISSING, *modules], env=env, cwd=self.repo,
                             capture_output=True, text=True, timeout=60)
        return out.stdout.split() if out.returncode == 0 else list(modules)

    def missing_reason(self, modules: list[str], paths: list[str]) -> str:
        """``missing: X (call N not run?)``: what a part lacks and which earlier call provides it."""
        what = ", ".join(modules + paths)
        if self.mode == "all":
            return f"missing: {what} (install the project and fetch the sources: docs/gpu.md)"
        if any(p.startswith(str(self.repo / PACK_DIR)) for p in paths):
            return f"missing: {what} (not packed: run `make gpu-check-pack` before the calls)"
        calls = sorted({n for m in modules if (n := self.provider(m)) is not None})
        if paths and not calls:
            calls = [1]  # what one call leaves in /tmp for the next is call 1's
        which = " and ".join(f"call {n}" for n in calls) or "an earlier call"
        return f"missing: {what} ({which} not run on this machine? calls must be issued back to back)"

    def provider(self, module: str) -> int | None:
        """The carry (= call) whose wheels hold ``module``, from any carry manifest here."""
        for carry in CARRIES:
            manifest = self.repo / carry / "manifest.json"
            if manifest.is_file():
                index = json.loads(manifest.read_text()).get("modules_by_carry", {})
                for name, modules in index.items():
                    if module in modules:
                        return int(name.removeprefix("carry"))
        return None
