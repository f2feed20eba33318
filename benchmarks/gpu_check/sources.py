"""The offline corpora of profile=gpu1, packed small enough to carry, and unpacked there.

- The Debian packages' unpacked trees (``deb/<package>_<version>/``, with their
  ``.complete`` markers) as one ``deb.tar.xz`` (the standard library reads xz; the GPU
  image need not have zstd).
- A PyPI source wheel as a slim zip of the same file name holding only the members the
  readers take (`stages.sources.registry.PypiWheel.members`): the readers open the wheel
  as a zip and read those members, nothing else (sizes: docs/performance.md).
- SmolLM2's GGUF is not carried (too large for a carry): the stand-in replaces it (`standin`).
"""

from __future__ import annotations

import shutil
import tarfile
import zipfile
from pathlib import Path

from stages.sources.registry import SOURCES, DebianPackages, PypiWheel, wheel_path

NOT_CARRIED = ("smollm2",)  # replaced by the stand-in of the same shape
DEB_ARCHIVE = "deb.tar.xz"


def carried_sources() -> list[str]:
    return [name for name in SOURCES if name not in NOT_CARRIED]


def pack_sources(sources_dir: Path, dest: Path) -> list[Path]:
    """Write the carried sources under ``dest`` (``deb.tar.xz``, ``pypi/...``); the files written."""
    dest.mkdir(parents=True, exist_ok=True)
    written, members = [], {}
    deb_folders = []
    for name in carried_sources():
        src = SOURCES[name]
        if isinstance(src, DebianPackages):
            deb_folders += [src.folder(package) for package, _ in src.packages]
        elif isinstance(src, PypiWheel):
            wheel = wheel_path(sources_dir, name)  # a clear error naming the fetch command if absent
            members.setdefault((src.folder, wheel), []).extend(src.members)
    if deb_folders:
        archive = dest / DEB_ARCHIVE
        with tarfile.open(archive, "w:xz", preset=9) as tar:
            for folder in sorted(set(deb_folders)):
                tar.add(sources_dir / folder, arcname=folder)
        written.append(archive)
    for (folder, wheel), names in members.items():
        slim = dest / folder / wheel.name
        slim.parent.mkdir(parents=True, exist_ok=True)
        with zipfile.ZipFile(wheel) as zin, zipfile.ZipFile(slim, "w", zipfile.ZIP_STORED) as zout:
            for member in sorted(set(names)):  # already compressed (bz2) or small: stored
                zout.writestr(zin.getinfo(member), zin.read(member))
        written.append(slim)
    return written


def unpack_sources(packed: Path, sources_dir: Path) -> None:
    """Lay the packed sources out under ``sources_dir`` as `stages.sources` fetches them."""
    sources_dir.mkdir(parents=True, exist_ok=True)
    archive = packed / DEB_ARCHIVE
    if archive.is_file():
        with tarfile.open(archive) as tar:
            tar.extractall(sources_dir, filter="data")
    for wheel in packed.rglob("*.whl"):
        target = sources_dir / wheel.relative_to(packed)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(wheel, target)
