"""No source file is ignored by git: a package whose folder a run-output pattern of
``.gitignore`` matches (``artifacts/`` is the artifact root's name, and a study's artifact
types live in ``stages/<study>/artifacts``) would pass every test here and be missing from
a clean clone."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ("stages", "nugget_core", "pipelines", "benchmarks", "tests", "docs", "conf")


def ignored(paths: list[Path]) -> list[str]:
    """The paths among ``paths`` (relative to the repository) that ``.gitignore`` ignores."""
    out = subprocess.run(["git", "-C", str(ROOT), "check-ignore", "--no-index", "--stdin"],
                         input="\n".join(str(p) for p in paths), capture_output=True, text=True)
    if out.returncode not in (0, 1):  # 1: none ignored
        raise RuntimeError(out.stderr)
    return out.stdout.split()


@pytest.fixture(scope="module")
def in_git() -> None:
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")


def test_the_check_sees_an_ignored_path(in_git):
    assert ignored([Path("stages/nugget/artifacts/__pycache__/x.pyc"), Path("stages/registry.py")]) == \
        ["stages/nugget/artifacts/__pycache__/x.pyc"]


def test_no_source_file_is_ignored(in_git):
    sources = [p.relative_to(ROOT) for top in SOURCES for p in sorted((ROOT / top).rglob("*"))
               if p.is_file() and p.suffix in (".py", ".md", ".yaml", ".json") and "__pycache__" not in p.parts]
    assert sources and not ignored(sources), "ignored by .gitignore, so missing from a clean clone"
