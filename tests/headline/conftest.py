"""Fixtures of the headline burst's tests (built once per session; no offline sources needed)."""

from __future__ import annotations

import pytest

from tests.headline.micro import write_tiny_data, write_tiny_lm


@pytest.fixture(scope="session")
def tiny_data(tmp_path_factory):
    folder = tmp_path_factory.mktemp("headline") / "data"
    return folder, write_tiny_data(folder)


@pytest.fixture(scope="session")
def tiny_lm(tmp_path_factory, tiny_data):
    _, data = tiny_data
    return write_tiny_lm(tmp_path_factory.mktemp("headline") / "lm", len(data.tokenizer()))
