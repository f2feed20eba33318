"""The environment's lock files (``requirements/{cpu,cuda}.lock.txt``, written by ``make lock``).

A lock is ``uv pip compile --universal --generate-hashes`` output: one entry per
distribution, ``name==version`` with an optional environment marker (a universal lock may
pin two versions of one name for different Pythons), then ``--hash`` continuation lines and
``# via`` comments. This module reads that text, picks the entries that apply to one
environment, and compares them with what is installed: the test that the running venv is
the locked one, and the GPU check's pack (which wheels to carry, at which version) use it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from packaging.markers import Marker
from packaging.requirements import Requirement
from packaging.version import Version

from stages.framework.environment import installed_version

REPO = Path(__file__).resolve().parents[2]
LOCKS = {"cpu": REPO / "requirements" / "cpu.lock.txt", "cuda": REPO / "requirements" / "cuda.lock.txt"}

ENTRY = re.compile(r"^(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)==(?P<version>[^\s;\\]+)\s*(?:;\s*(?P<marker>[^\\]+?))?\s*\\?$")
HASH = re.compile(r"^\s+--hash=(?P<hash>\S+?)\s*\\?$")


def norm(name: str) -> str:
    """PEP 503 normalised distribution name."""
    return re.sub(r"[-_.]+", "-", name).lower()


@dataclass(frozen=True)
class Pin:
    """One entry of a lock: a distribution at one version, where ``marker`` holds."""

    name: str
    version: str
    marker: Marker | None
    hashes: tuple[str, ...]

    def applies(self, environment: dict[str, str] | None = None) -> bool:
        return self.marker is None or self.marker.evaluate(environment)


def parse(text: str, source: str = "lock") -> list[Pin]:
    """Every entry of a lock's text; a line that is neither an entry, a hash nor a comment
    is an error naming ``source`` and the line (the file was edited or is not uv's)."""
    pins: list[Pin] = []
    name = version = marker = None
    hashes: list[str] = []

    def close() -> None:
        if name is not None:
            pins.append(Pin(norm(name), version, Marker(marker) if marker else None, tuple(hashes)))

    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if entry := ENTRY.match(line):
            close()
            name, version, marker, hashes = entry["name"], entry["version"], entry["marker"], []
        elif (digest := HASH.match(line)) and name is not None:
            hashes.append(digest["hash"])
        else:
            raise ValueError(f"{source}:{n}: not a line of a uv lock: {line.strip()!r} (regenerate it: make lock)")
    close()
    return pins


def read(variant: str) -> list[Pin]:
    """The pins of ``requirements/<variant>.lock.txt``."""
    if variant not in LOCKS:
        raise ValueError(f"no lock variant {variant!r}: one of {sorted(LOCKS)}")
    path = LOCKS[variant]
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing: run `make lock`")
    return parse(path.read_text(), str(path.relative_to(REPO)))


def applicable(pins: Iterable[Pin], environment: dict[str, str] | None = None) -> dict[str, str]:
    """{name: version} of the pins whose marker holds in ``environment`` (default: this
    interpreter). Two applying versions of one name mean a broken lock: an error."""
    chosen: dict[str, str] = {}
    for pin in pins:
        if not pin.applies(environment):
            continue
        if pin.name in chosen and chosen[pin.name] != pin.version:
            raise ValueError(f"the lock pins {pin.name} at both {chosen[pin.name]} and {pin.version} "
                             "for one environment: regenerate it (make lock)")
        chosen[pin.name] = pin.version
    return chosen


def variant_of(torch_version: str) -> str:
    """``cpu`` for a ``+cpu`` build of torch, else ``cuda`` (PyPI's torch carries CUDA)."""
    return "cpu" if Version(torch_version).local == "cpu" else "cuda"


def fix_command(variant: str, prefix: str) -> str:
    """The command that makes the environment at ``prefix`` (``sys.prefix``) the lock's:
    ``make install`` for the repository's own ``.venv`` (dropping its stamp, which is newer
    than the lock when the venv drifted by hand), ``uv pip sync`` for any other."""
    if variant == "cpu" and Path(prefix).resolve() == (REPO / ".venv").resolve():
        return "rm -f .venv/.installed && make install"
    wheels = " --find-links <TORCH_CPU_WHEELS, docs/environment.md>" if variant == "cpu" else ""
    return (f"uv pip sync --python {Path(prefix) / 'bin' / 'python'} --require-hashes{wheels} "
            f"{LOCKS[variant].relative_to(REPO)}")


def mismatches(locked: dict[str, str], installed: Callable[[str], str | None] = installed_version) -> list[str]:
    """One line per locked distribution installed at another version, or not at all."""
    out = []
    for name, version in sorted(locked.items()):
        have = installed(name)
        if have is None:
            out.append(f"{name}: locked {version}, not installed")
        elif Version(have) != Version(version):
            out.append(f"{name}: locked {version}, installed {have}")
    return out


def unlocked(requirements: Iterable[str], pins: Iterable[Pin]) -> list[str]:
    """The requirements (PEP 508 strings, e.g. pyproject's dependencies) that no pin of the
    lock satisfies: absent from it, or locked at a version outside their specifier."""
    versions: dict[str, set[str]] = {}
    for pin in pins:
        versions.setdefault(pin.name, set()).add(pin.version)
    out = []
    for text in requirements:
        req = Requirement(text)
        have = versions.get(norm(req.name))
        if not have:
            out.append(f"{text}: not in the lock")
        elif not all(req.specifier.contains(v, prereleases=True) for v in have):
            out.append(f"{text}: locked at {', '.join(sorted(have))}")
    return out
