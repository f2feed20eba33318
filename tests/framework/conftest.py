from __future__ import annotations

from pathlib import Path

import pytest

from tests.framework.fixtures import make_fake_sources

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def sources(tmp_path: Path) -> Path:
    return make_fake_sources(tmp_path / "sources")


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path / "artifacts"


@pytest.fixture
def base_args(root: Path, sources: Path) -> list[str]:
    return [f"run.artifact_root={root}", f"run.sources_dir={sources}"]


@pytest.fixture
def no_ray(monkeypatch):
    """Fail the test if the CLI gets past its preflight, as far as starting Ray or executing."""
    from pipelines import cli

    def started(*_args, **_kwargs):
        raise AssertionError("the CLI went past the preflight: the bad input was not refused before Ray")

    monkeypatch.setattr(cli, "connect_ray", started)
    monkeypatch.setattr(cli, "execute", started)
