"""Every external input of profile=paper as local files, for the paper rehearsal.

:func:`write_paper_inputs` writes the datasets in their published layouts
(`tests.rehearsal.datasets`) and tiny random checkpoints of the paper's models
(`tests.rehearsal.models`) under one directory, and returns the dotlist overrides that
point profile=paper's external-input fields (each stage's ``external_paths`` and
``external_models``) at them. Deterministic: the same files on every run.

    python -m tests.rehearsal.inputs --dir /tmp/paper-inputs   # prints the overrides

The command reuses a finished directory: ``COMPLETE`` is written last, listing the
overrides, so an interrupted write is never taken for a finished one (it is redone).
"""

from __future__ import annotations

import argparse
import contextlib
import shutil
import sys
import time
from pathlib import Path
from typing import NamedTuple

from tests.rehearsal.datasets import WRITERS, corpus_texts
from tests.rehearsal.models import write_models

COMPLETE = "COMPLETE"  # the marker of a finished directory, written last


class PaperInputs(NamedTuple):
    """A finished inputs directory and the overrides naming its files."""

    root: Path
    overrides: list[str]


def write_paper_inputs(root: Path) -> list[str]:
    """Write every input under ``root`` (a new or empty directory) and return the
    overrides naming them."""
    root = Path(root).resolve()
    root.mkdir(parents=True, exist_ok=True)
    if any(root.iterdir()):
        raise FileExistsError(f"{root}: not empty; write the inputs into a new directory")
    overrides = [o for write in WRITERS for o in write(root)]
    return overrides + write_models(root / "models", corpus_texts(root))


def ensure_paper_inputs(root: Path) -> list[str]:
    """The overrides of a finished ``root``, writing it first when it is not finished
    (a half-written one is removed and written again)."""
    root = Path(root).resolve()
    marker = root / COMPLETE
    if marker.is_file():
        return marker.read_text(encoding="utf-8").splitlines()
    if root.exists():
        shutil.rmtree(root)
    overrides = write_paper_inputs(root)
    partial = root / f".{COMPLETE}.tmp"
    partial.write_text("\n".join(overrides) + "\n", encoding="utf-8")
    partial.rename(marker)
    return overrides


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dir", required=True, type=Path, help="where to write the inputs (reused when finished)")
    args = parser.parse_args(argv)
    tick = time.time()
    # stdout holds the overrides only (`$(python -m tests.rehearsal.inputs --dir D)`): what the
    # libraries print while the models are written (DeepSpeed's accelerator line) goes to stderr
    with contextlib.redirect_stdout(sys.stderr):
        overrides = ensure_paper_inputs(args.dir)
    print("\n".join(overrides))
    print(f"paper inputs in {args.dir.resolve()} ({time.time() - tick:.1f}s)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
