"""CLI: ``python -m stages.sources {list,fetch} [NAME ...] [--dir DIR]``."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path

from stages.sources.fetch import fetch
from stages.sources.registry import SOURCES, SourceMissingError, source_path

DEFAULT_DIR = os.environ.get("NUGGET_SOURCES_DIR", "~/.cache/nugget-pipeline/sources")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m stages.sources", description=__doc__)
    parser.add_argument("command", choices=("list", "fetch"))
    parser.add_argument("names", nargs="*", help="sources (default: all)")
    parser.add_argument("--dir", default=DEFAULT_DIR, help="sources cache (default: %(default)s)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    root = Path(args.dir).expanduser()
    names = args.names or sorted(SOURCES)
    for name in names:
        if name not in SOURCES:
            parser.error(f"unknown source {name!r}; known: {', '.join(sorted(SOURCES))}")
    for name in names:
        src = SOURCES[name]
        if args.command == "fetch":
            fetch(name, root)
        else:
            try:
                where = str(source_path(root, name))
            except SourceMissingError:
                where = "MISSING"
            print(f"{name:16s} {src.pins}\n    {where}\n    {src.description}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
