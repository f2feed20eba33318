"""The "add a stage" checklist of docs/architecture.md, checked for every registered
stage: its study is its package, its config sections resolve with defaults, its output
has a contract class, its row of the generated stage table has a description, and a
test module names it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pipelines import stage_docs
from stages.artifacts.catalog import output_of
from stages.config import load_config
from stages.framework.keys import config_value, stage_sections
from stages.registry import ALL_STAGES, DAG
from tests.extras import HARNESS_OFF

TESTS = Path(__file__).resolve().parents[1]
# these two name every stage through the registry: they test the docs, not the stage
NOT_A_STAGE_TEST = {"test_stage_checklist.py", "test_generated_docs.py"}


@pytest.fixture(scope="module")
def defaults():
    return load_config(HARNESS_OFF)


@pytest.fixture(scope="module")
def test_sources() -> dict[Path, str]:
    return {p: p.read_text(encoding="utf-8") for p in sorted(TESTS.rglob("test_*.py")) if p.name not in NOT_A_STAGE_TEST}


def _failing(check) -> list[str]:
    problems = []
    for stage in ALL_STAGES:
        try:
            problem = check(stage)
        except (KeyError, ValueError) as exc:
            problem = str(exc.args[0]) if exc.args else str(exc)  # a KeyError quotes its str()
        if problem:
            problems.append(f"{stage.name}: {problem}")
    return problems


def test_every_stage_is_in_a_study_package():
    assert not _failing(lambda s: stage_docs.group_of(s) and None)


def test_every_stage_config_section_resolves_with_defaults(defaults):
    def check(stage):
        missing = [k for k in stage.config_keys if config_value(defaults, k) is None]
        if not stage.config_keys or missing:
            return f"config_keys {stage.config_keys} unresolved by load_config([]): {missing}"
        errors = stage.config_errors(stage_sections(stage, defaults))
        return f"the default config fails its own checks: {errors}" if errors else None

    problems = _failing(check)
    assert not problems, "\n".join(problems) + "\n(add the section with defaults to stages/config/ and conf/)"


def test_every_stage_output_has_a_contract():
    problems = _failing(lambda s: output_of(s) and None)
    assert not problems, "\n".join(problems)


def test_every_stage_row_of_the_generated_table_has_a_description():
    # cells split at the pipes a description cannot hold (its own are escaped: \\|)
    cells = [[c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]]
             for line in stage_docs.stage_table(DAG).splitlines()[2:]]
    described = {row[0].strip("`"): row[-1] for row in cells}
    problems = _failing(lambda s: None if described[s.name]
                        else "no description: add one to its row of stages/stage_table.json")
    assert not problems, "\n".join(problems)


def test_every_stage_is_named_by_a_test_module(test_sources):
    def check(stage):
        named = re.compile(rf"[\"']{stage.name}[\"']|\b{stage.__name__}\b")
        if not any(named.search(text) for text in test_sources.values()):
            return f"no tests/**/test_*.py names {stage.name!r} or {stage.__name__}: add a test that runs it"
        return None

    problems = _failing(check)
    assert not problems, "\n".join(problems)
