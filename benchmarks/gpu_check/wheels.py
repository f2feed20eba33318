"""Which wheels a GPU image without this project's stack needs, and where they come from.

Needed = the runtime dependency closure of this project (``[project].dependencies`` of
pyproject.toml with their extras, followed through each installed distribution's
``Requires-Dist`` and markers, in the project's venv) minus what the image already has, each
at the version ``requirements/cuda.lock.txt`` pins for the image's Python and platform (the
GPU variant of the lock; `locked_for_image`).
Dev and cluster-test tools (pytest plugins aside, which the image has: moto, cfn-lint,
s3fs, boto3, ruff...) are outside that closure, so they are never carried. Each wheel is
taken from a wheel folder (a cache; ``--download`` fills what it lacks with ``pip
download`` for the image's Python and platform, or ``pip wheel`` for sdist-only packages).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

from packaging.markers import default_environment

from stages.framework import lockfile

IMAGE_PACKAGES = Path(__file__).with_name("image_packages.txt")
# in the closure, never imported by anything that runs on the GPU machine
NOT_CARRIED = {"py-spy": "a sampling profiler binary that Ray's dashboard calls on demand only",
               "nugget-pipeline": "this project: it travels as source"}
# parts of the Ray wheel this project never loads (Java workers, RLlib, Serve, Ray's LLM
# library, the dashboard's JavaScript build): about half the wheel (docs/performance.md)
RAY_DROP = ("ray/jars/", "ray/rllib/", "ray/serve/", "ray/llm/", "ray/dashboard/client/build/")
IMAGE_PYTHON = "3.12"
PLATFORMS = ("manylinux_2_28_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64", "manylinux_2_5_x86_64",
             "manylinux1_x86_64")

# run in the project's venv: {normalised name: version} of the closure of the requirements
# given as a JSON list
CLOSURE_SCRIPT = r"""
import importlib.metadata as md, json, re, sys
from packaging.requirements import Requirement
norm = lambda n: re.sub(r"[-_.]+", "-", n).lower()
todo = [Requirement(r) for r in json.loads(sys.argv[1])]
extras, found = {}, {}
while todo:
    req = todo.pop()
    name = norm(req.name)
    if name in extras and set(req.extras) <= extras[name]:
        continue
    extras.setdefault(name, set()).update(req.extras)
    try:
        dist = md.distribution(req.name)
    except md.PackageNotFoundError:
        found[name] = None
        continue
    found[name] = dist.version
    envs = [{"extra": e} for e in (extras[name] or {""})]
    for text in dist.requires or []:
        sub = Requirement(text)
        if sub.marker is None or any(sub.marker.evaluate(e) for e in envs):
            todo.append(sub)
print(json.dumps(found))
"""


def norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def runtime_closure(python: str, pyproject: Path) -> dict[str, str | None]:
    """{name: installed version (None: not installed)} of the project's runtime closure."""
    import tomllib

    return closure(python, tomllib.loads(pyproject.read_text())["project"]["dependencies"])


def closure(python: str, requirements: list[str]) -> dict[str, str | None]:
    """{name: installed version (None: not installed)} of ``requirements`` and all they need."""
    out = subprocess.run([python, "-c", CLOSURE_SCRIPT, json.dumps(requirements)], capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"gpu-check pack: could not read the dependency closure with {python}:\n{out.stderr}")
    return json.loads(out.stdout)


def image_packages(path: Path = IMAGE_PACKAGES) -> set[str]:
    lines = (line.split("==")[0].strip() for line in path.read_text().splitlines())
    return {norm(line) for line in lines if line and not line.startswith("#")}


def needed(closure: dict[str, str | None], image: set[str]) -> dict[str, str]:
    """The closure's distributions the image lacks, less those never carried."""
    missing = sorted(n for n, v in closure.items() if v is None and n not in image and n not in NOT_CARRIED)
    if missing:
        raise SystemExit(f"gpu-check pack: {missing} are runtime dependencies not installed in the venv: "
                         "make install first")
    return {n: v for n, v in closure.items() if n not in image and n not in NOT_CARRIED and v is not None}


def image_environment() -> dict[str, str]:
    """The marker environment of the GPU image: CPython `IMAGE_PYTHON` on Linux x86_64."""
    return {**default_environment(), "python_version": IMAGE_PYTHON, "python_full_version": f"{IMAGE_PYTHON}.0",
            "implementation_name": "cpython", "platform_python_implementation": "CPython",
            "implementation_version": f"{IMAGE_PYTHON}.0", "os_name": "posix", "sys_platform": "linux",
            "platform_system": "Linux", "platform_machine": "x86_64"}


def locked_for_image(want: dict[str, str], pins: list[lockfile.Pin]) -> dict[str, str]:
    """``want``'s names at the versions the CUDA lock pins for the image (its Python may pick
    another version than the venv's, e.g. numpy); a name the lock lacks is an error."""
    locked = lockfile.applicable(pins, image_environment())
    missing = sorted(set(want) - set(locked))
    if missing:
        raise SystemExit(f"gpu-check pack: {missing} are not in requirements/cuda.lock.txt for Python "
                         f"{IMAGE_PYTHON}: make lock")
    return {name: locked[name] for name in want}


def wheel_name_version(wheel: Path) -> tuple[str, str]:
    name, version = wheel.name.split("-")[:2]
    return norm(name), version


def find_wheel(folder: Path, name: str, version: str) -> Path | None:
    for wheel in sorted(folder.glob("*.whl")):
        if wheel_name_version(wheel) == (name, version):
            return wheel
    return None


def download(name: str, version: str, dest: Path, python: str) -> None:
    """A wheel of ``name==version`` for the image's Python and platform into ``dest``."""
    pin = f"{name}=={version}"
    platforms = [arg for p in PLATFORMS for arg in ("--platform", p)]
    cmd = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:",
           "--python-version", IMAGE_PYTHON, "--implementation", "cp", *platforms, "-d", str(dest), pin]
    if subprocess.run(cmd, capture_output=True).returncode != 0:  # sdist only: a wheel built here
        subprocess.run([python, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(dest),
                        pin], check=True, env={**os.environ, "DS_BUILD_OPS": "0"})


def copy_wheel(src: Path, dest_dir: Path) -> Path:
    """``src`` into ``dest_dir``; Ray's wheel without `RAY_DROP` (and its RECORD lines)."""
    dest = dest_dir / src.name
    if wheel_name_version(src)[0] != "ray":
        shutil.copy2(src, dest)
        return dest
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dest, "w", zipfile.ZIP_DEFLATED) as zout:
        for info in zin.infolist():
            if info.filename.startswith(RAY_DROP):
                continue
            data = zin.read(info)
            if info.filename.endswith(".dist-info/RECORD"):
                kept = [line for line in data.decode().splitlines() if not line.startswith(RAY_DROP)]
                data = ("\n".join(kept) + "\n").encode()
            zout.writestr(info, data)
    return dest


def top_level(wheel: Path) -> set[str]:
    """Import names a wheel installs at the top of a site folder (``foo`` for foo/ and foo.py)."""
    names = set()
    with zipfile.ZipFile(wheel) as z:
        for member in z.namelist():
            first = member.split("/")[0]
            if first.endswith(".dist-info"):
                continue
            if first.endswith(".data"):  # purelib / platlib land at the top as well
                parts = member.split("/")
                if len(parts) > 3 and parts[1] in ("purelib", "platlib"):
                    first = parts[2]
                else:
                    continue
            names.add(first.removesuffix(".py").split(".")[0] if first.endswith((".py", ".so")) else first)
    return names
