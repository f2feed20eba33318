"""The documentation is self-contained: nothing points outside the repository, and every
local link of the README and docs/ resolves."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
# names of notes that live outside the repository (a user of a clone does not have them)
OUTSIDE = re.compile(r"\.\./shared|DESIGN\.md|ENV-NOTES|STYLE\.md|\bissue \d+")
LINK = re.compile(r"\]\(([^)#]+)(?:#[^)]*)?\)")


def _tracked(*patterns: str) -> list[Path]:
    out = subprocess.run(["git", "ls-files", *patterns], cwd=REPO, capture_output=True, text=True, check=True)
    return [REPO / line for line in out.stdout.splitlines() if (REPO / line).is_file()]


def test_no_reference_outside_the_repository():
    files = _tracked("*.py", "*.md", "*.yaml", "Makefile", "*.toml")
    offenders = [
        f"{path.relative_to(REPO)}:{n}: {line.strip()}"
        for path in files
        if path.name != "test_docs.py"
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if OUTSIDE.search(line)
    ]
    assert not offenders, "\n".join(offenders)


def test_readme_and_docs_links_resolve():
    broken = []
    for page in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]:
        for target in LINK.findall(page.read_text(encoding="utf-8")):
            if "://" in target or target.startswith("mailto:"):
                continue
            if not (page.parent / target).exists():
                broken.append(f"{page.relative_to(REPO)} -> {target}")
    assert not broken, broken
