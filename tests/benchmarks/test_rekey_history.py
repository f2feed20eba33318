"""benchmarks/rekey_history.py on a tiny git history: which edits re-key which stages under
the old identity (bytes, the framework in closures), the new (normalised AST, framework out)
and the new with the scheduling metadata out of stage modules."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from benchmarks import registry_reader, rekey_history
from stages.framework import provenance

REPO = Path(__file__).resolve().parents[2]

FILES = {
    "stages/__init__.py": "",
    "stages/framework/__init__.py": "",
    "stages/framework/stage.py": "class Stage:\n    version = 1\n    upstream = ()\n",
    "nugget_core/__init__.py": "",
    "nugget_core/util.py": '"""Helpers."""\n\n\ndef double(x):\n    return 2 * x\n',
    "stages/alpha.py": (
        "from nugget_core.util import double\nfrom stages.framework.stage import Stage\n\n\n"
        "class Alpha(Stage):\n    name = 'alpha'\n\n    def run(self):\n        return double(1)  # one\n"),
    "stages/beta.py": (
        "from stages.framework.stage import Stage\n\nREADS = 'alpha'\n\n\n"
        "class Beta(Stage):\n    name = 'beta'\n    upstream = (READS,)\n    expected_seconds = 10\n\n"
        "    def run(self):\n        return 2\n"),
    "stages/registry.py": (
        "from stages.alpha import Alpha\nfrom stages.beta import Beta\nfrom stages.framework.stage import Stage\n\n"
        "ALL_STAGES = (Alpha, Beta)\n"),
}
# (subject, file, old text, new text): each commit edits one file of the previous tree
EDITS = [
    ("comment", "stages/alpha.py", "# one", "# the first"),
    ("docstring", "nugget_core/util.py", '"""Helpers."""', '"""Small helpers."""'),
    ("framework", "stages/framework/stage.py", "version = 1", "version = 2"),
    ("metadata", "stages/beta.py", "expected_seconds = 10", "expected_seconds = 30"),
    ("code", "nugget_core/util.py", "2 * x", "x + x"),
]
A, B, G = "stages.alpha:Alpha", "stages.beta:Beta", "stages.gamma:Gamma"
EXPECTED = {  # subject: (re-keyed stages, how many recomputed) under old / new / new_metadata_out
    "comment": (([A], 2), ([], 0), ([], 0)),  # beta reads alpha: recomputed below it
    "docstring": (([A], 2), ([], 0), ([], 0)),
    "framework": (([A, B], 2), ([], 0), ([], 0)),
    "metadata": (([B], 1), ([B], 1), ([], 0)),
    "code": (([A], 2), ([A], 2), ([A], 2)),
    "gamma added": (([B, G], 2), ([B, G], 2), ([G], 1)),
}


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", *args],
                   check=True, capture_output=True)


def commit_all(repo: Path, subject: str) -> None:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", subject)


@pytest.fixture
def history(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    for rel, text in FILES.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    commit_all(repo, "base")
    for subject, rel, old, new in EDITS:
        path = repo / rel
        assert old in path.read_text()
        path.write_text(path.read_text().replace(old, new))
        commit_all(repo, subject)
    # a new stage module, and a metadata-only line in the same commit
    (repo / "stages/gamma.py").write_text("from stages.beta import Beta\n\n\nclass Gamma(Beta):\n    name = 'gamma'\n")
    beta = repo / "stages/beta.py"
    beta.write_text(beta.read_text().replace("class Beta(Stage):", 'class Beta(Stage):\n    description = "b"'))
    registry = repo / "stages/registry.py"
    registry.write_text(registry.read_text().replace("(Alpha, Beta)", "(Alpha, Beta, Gamma)")
                        .replace("from stages.beta", "from stages.gamma import Gamma\nfrom stages.beta"))
    commit_all(repo, "gamma added")
    return repo


def test_each_scheme_rekeys_what_the_edit_touches(history: Path, tmp_path: Path):
    commits = rekey_history.commits(history, None, "HEAD", len(EXPECTED))
    rows = rekey_history.replay(history, commits, tmp_path / "work")
    verdicts = {r["subject"]: tuple((r[s]["rekeyed"], r[s]["recomputed"]) for s in rekey_history.SCHEMES)
                for r in rows}
    assert verdicts == EXPECTED
    summary = rekey_history.summarise(rows)
    assert summary["old"]["rekey_all"] == 1 and summary["new"]["rekey_all"] == 0  # the framework edit
    assert [summary[s]["recompute_all"] for s in rekey_history.SCHEMES] == [4, 1, 1]
    assert [summary[s]["rekey_at_least_one"] for s in rekey_history.SCHEMES] == [6, 3, 2]
    assert provenance.PLUMBING_PACKAGES == ("stages.framework",)  # the old scheme's setting was undone


def test_range_and_the_written_results(history: Path, tmp_path: Path):
    out = tmp_path / "rekey.json"
    rekey_history.main(["--repo", str(history), "--range", "HEAD~2..HEAD", "--out", str(out)])
    rows = json.loads(out.read_text())["commits"]
    assert [r["subject"] for r in rows] == ["code", "gamma added"]
    assert rows[1]["stages"] == 3 and rows[1]["old"]["count"] == 2


def test_registry_that_is_no_literal_tuple_is_refused(tmp_path: Path):
    (tmp_path / "stages").mkdir()
    (tmp_path / "stages/registry.py").write_text("from stages.a import A\nALL_STAGES = tuple([A])\n")
    with pytest.raises(registry_reader.Unreadable, match="literal tuple"):
        registry_reader.registered_stages(tmp_path)


def test_upstream_that_is_no_literal_is_refused(tmp_path: Path):
    (tmp_path / "stages").mkdir()
    (tmp_path / "stages/registry.py").write_text("from stages.a import A\nALL_STAGES = (A,)\n")
    (tmp_path / "stages/a.py").write_text("class A:\n    name = 'a'\n    upstream = tuple(sorted(['b']))\n")
    with pytest.raises(registry_reader.Unreadable, match=r"a.py:3: sorted\(\['b'\]\) is not a literal"):
        registry_reader.stage_graph(tmp_path)


def test_reader_follows_a_header_through_generic_base_classes(tmp_path: Path):
    """``class Mine(Base[MyConfig, MyInputs])`` with ``class Base(Stage[ConfigT, InputsT, Out])``:
    the upstream of the inputs class bound two levels down, its base dataclass's fields first."""
    (tmp_path / "stages/framework").mkdir(parents=True)
    (tmp_path / "stages/framework/stage.py").write_text(
        "from typing import Generic, TypeVar\nC = TypeVar('C')\nclass Stage(Generic[C]):\n    upstream = ()\n")
    (tmp_path / "stages/registry.py").write_text("from stages.mine import Mine\nALL_STAGES = (Mine,)\n")
    (tmp_path / "stages/shared.py").write_text(
        "import typing\nfrom stages.framework.stage import Stage\n"
        "ConfigT = typing.TypeVar('ConfigT')\nInputsT = TypeVar('InputsT')\n"
        "class Prepared:\n    STAGE = 'prepare'\n"
        "class BaseInputs:\n    prepared: Prepared\n"
        "class Base(Stage[ConfigT, InputsT, Prepared]):\n    name = 'base'\n"
        "class Narrow(Base[ConfigT, InputsT]):\n    pass\n")
    (tmp_path / "stages/mine.py").write_text(
        "from stages.shared import BaseInputs, Narrow, Prepared\n"
        "class MyInputs(BaseInputs):\n    other: Prepared = produced_by('other')\n"
        "class Mine(Narrow[MyConfig, MyInputs]):\n    name = 'mine'\n")
    node, = registry_reader.stage_graph(tmp_path)
    assert (node.name, node.upstream) == ("mine", ("prepare", "other"))


def test_reader_finds_the_dag_the_registry_builds():
    from stages.registry import ALL_STAGES

    read = {n.id: (n.name, n.upstream) for n in registry_reader.stage_graph(REPO)}
    assert read == {f"{s.__module__}:{s.__name__}": (s.name, tuple(s.upstream)) for s in ALL_STAGES}


def test_metadata_out_drops_class_attributes_only():
    source = ("expected_seconds = 1\n\n\nclass S:\n    expected_seconds = 5\n    description: str = 'x'\n"
              "    run_name_keys = ['a']\n    version = 2\n")
    out = rekey_history.without_scheduling_metadata(source)
    assert "expected_seconds = 1" in out and "version = 2" in out
    assert "description" not in out and "run_name_keys" not in out and "= 5" not in out
