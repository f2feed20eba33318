"""What call 1 leaves in /tmp for call 2, and how call 2 takes it up.

The real SmolLM2 GGUF (94 MiB) cannot travel in one call (64 MiB with the repository), so
`pack` cuts it in two: carry 1 brings the first part and the burst's data, `stash` copies
them to the scratch folder (``/tmp/gpu-check`` on the lent machine, kept while it stays
warm); carry 2 brings the second part and the `gguf` wheel, and `assemble` joins the parts,
checks the whole file's sha256 against carry 2's manifest (a part from another pack or a
cut transfer is refused, naming it) and installs the wheel into ``SITE/carry2``.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from benchmarks.gpu_check.calls import DATA, GGUF
from stages.framework.checksums import sha256_of

CHUNK = 2**20


def stash(carry: Path, scratch: Path) -> int:
    """Copy carry 1's GGUF part and the burst's data into ``scratch`` (replacing older copies)."""
    scratch.mkdir(parents=True, exist_ok=True)
    part = f"{GGUF}.part1"
    shutil.copyfile(carry / part, scratch / f"{part}.tmp")
    (scratch / f"{part}.tmp").replace(scratch / part)
    shutil.rmtree(scratch / DATA, ignore_errors=True)
    shutil.copytree(carry / DATA, scratch / DATA)
    print(f"stash: {part} and {DATA} -> {scratch}", flush=True)
    return 0


def assemble(carry: Path, scratch: Path, site: Path) -> int:
    """``scratch/GGUF`` from the two parts, checked; carry 2's wheels into ``site/carry2``."""
    manifest = json.loads((carry / "manifest.json").read_text())
    first = scratch / f"{GGUF}.part1"
    if not first.is_file():
        print(f"assemble: {first} is missing: call 1 did not run on this machine (the calls must be issued "
              "back to back, within 30 s of each other)", file=sys.stderr)
        return 2
    target = scratch / GGUF
    tmp = scratch / f"{GGUF}.tmp"
    with tmp.open("wb") as out:
        for part in (first, carry / f"{GGUF}.part2"):
            with part.open("rb") as f:
                shutil.copyfileobj(f, out, CHUNK)
    got, want = sha256_of(tmp), manifest["gguf_sha256"]
    if got != want:
        tmp.unlink()
        print(f"assemble: the joined {GGUF} has sha256 {got}, carry 2's manifest says {want}: call 1's part is "
              "from another pack (pack once, then issue both calls)", file=sys.stderr)
        return 3
    tmp.replace(target)
    print(f"assemble: {target} ({target.stat().st_size:,} bytes, sha256 ok)", flush=True)
    wheels = sorted((carry / "wheels").glob("*.whl"))
    if not wheels:
        return 0
    cmd = [sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--no-compile", "--no-cache-dir",
           "--disable-pip-version-check", "--target", str(site / carry.name), *map(str, wheels)]
    print(f"assemble: {len(wheels)} wheels -> {site / carry.name}", flush=True)
    return subprocess.run(cmd).returncode
