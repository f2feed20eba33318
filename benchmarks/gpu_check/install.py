"""On the GPU machine: install one carry (its wheels into ``SITE/carryN``, its sources
unpacked where the pipeline reads them) and mark it installed.

One pip ``--target`` per carry: pip moves each top-level folder into a target and, when
one exists already (``bin/``, a namespace such as ``google/``), either skips it or, with
``--upgrade``, replaces it with its own copy; one target per carry keeps every carry's files.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from benchmarks.gpu_check.sources import unpack_sources

INSTALLED = ".gpu-check-installed.json"


def install_carry(carry: Path, site: Path, sources: Path) -> int:
    manifest = json.loads((carry / "manifest.json").read_text())
    wheels = sorted((carry / "wheels").glob("*.whl"))
    target = site / carry.name
    rc = 0
    if wheels:
        cmd = [sys.executable, "-m", "pip", "install", "--no-index", "--no-deps", "--no-compile", "--no-cache-dir",
               "--disable-pip-version-check", "--target", str(target), *map(str, wheels)]
        print(f"install: {len(wheels)} wheels -> {target}", flush=True)
        rc = subprocess.run(cmd).returncode
    if (carry / "sources").is_dir():
        unpack_sources(carry / "sources", sources)
        print(f"install: sources -> {sources}", flush=True)
    if rc == 0:
        target.mkdir(parents=True, exist_ok=True)
        (target / INSTALLED).write_text(json.dumps({"carry": carry.name, "wheels": manifest.get("wheels", [])}))
    return rc
