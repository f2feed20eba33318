"""Comments and docstrings say what the code does and why, in the present tense; what was
once measured or how something used to fail lives in docs/ (reliability.md,
performance.md, environment-notes.md, profiles.md), named by module.

The patterns below are narrow on purpose: each one matches a way this tree used to narrate
a past measurement, and none matches ordinary present-tense prose (the scan of the whole
tree is the check of that)."""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCANNED = ("stages", "nugget_core", "pipelines")

HISTORY = [re.compile(p, re.IGNORECASE) for p in (
    r"\bused to (fail|pass|be|take|fix|hang|print|find only)\b",  # "a stage used to fail after training"
    r"\bfail(ed|s)? after \d",                                    # "used to fail after 35-65 s of retries"
    r"\b\d+(\.\d+)? ?s (of|into|inside)\b",                       # "113 s of sqlite retries", "16 s into a run"
    r"\bmeasured(: | at about\b)|\(measured\)",                   # "(measured: the loss stalls ...)", "(measured)"
    r"\b(was|were) measured (still|at)\b",                        # "were measured still running"
    r"\bin the one measured\b",
    r"\b(in the review of|at commit|ending at) [0-9a-f]{7,40}\b",  # a commit a number was measured at
    r"~\d+(\.\d+)? ?(s|ms|min)\b",                                # "costs ~0.9 s", "~7 s less per start"
    r"~\d+(\.\d+)? (CPU |GPU )?(minutes|seconds|hours)\b",        # "~15 CPU minutes of fixed cost"
)]

# Modules another piece of work is rewriting now; each entry must still match (so the list
# only shrinks), and the lead moves their history into docs/ when that work lands.
PENDING: set[str] = set()


def _texts(path: Path) -> list[tuple[int, str]]:
    """(line, text) of every comment block (consecutive comment lines joined) and every
    string statement (docstrings, attribute docstrings) of ``path``, whitespace collapsed
    so a phrase broken across lines still matches."""
    source = path.read_text(encoding="utf-8")
    blocks: list[tuple[int, list[str]]] = []
    last = -2
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type != tokenize.COMMENT:
            continue
        text = tok.string.lstrip("#:").strip()
        if tok.start[0] == last + 1 and blocks:
            blocks[-1][1].append(text)
        else:
            blocks.append((tok.start[0], [text]))
        last = tok.start[0]
    out = [(line, " ".join(parts)) for line, parts in blocks]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            out.append((node.lineno, node.value.value))
    return [(line, " ".join(text.split())) for line, text in out]


def _narrations(text: str) -> list[str]:
    return [m.group(0) for pattern in HISTORY for m in [pattern.search(text)] if m]


def _offenders() -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for root in SCANNED:
        for path in sorted((REPO / root).rglob("*.py")):
            rel = path.relative_to(REPO).as_posix()
            hits = [f"{rel}:{line}: {', '.join(map(repr, _narrations(text)))}"
                    for line, text in _texts(path) if _narrations(text)]
            if hits:
                found[rel] = hits
    return found


def test_no_comment_or_docstring_narrates_a_past_measurement():
    found = _offenders()
    offenders = [hit for rel, hits in found.items() if rel not in PENDING for hit in hits]
    assert not offenders, (
        "history in code (move it, with its numbers, to docs/ under the module's name and keep a "
        "present-tense why):\n" + "\n".join(offenders))
    stale = sorted(PENDING - found.keys())
    assert not stale, f"no longer narrates history, drop from PENDING: {stale}"


@pytest.mark.parametrize("sentence", [
    # what this tree held before its history moved to docs/
    "a tokenizer vocabulary of 10**23 failed 16 s into a run with an OverflowError",
    "a keep_layers beyond the depth used to fail after 63 s of conversion",
    "an unwritable artifact root after 113 s of sqlite retries",
    "on a machine without network used to fail after 35-65 s of retries inside a stage",
    "A cluster user used to fix one problem per attempt",
    "run.device=cuda on a machine without a GPU used to pass --dry-run",
    "A make run log used to be mostly progress bars",
    "the agents were measured still running, reparented to init",
    "WeakSet._remove in the one measured",
    "a random-init model cannot learn (measured: the loss stalls near 3.6)",
    "whose exact count does not (measured: one 49-subword paragraph at 48)",
    "22.5 with the whole context; measured in the review of 98fe98b",
    "importing it costs ~0.9 s, and every process would pay it",
    "include_dashboard=False: ~7 s less per start",
    "a full grid: 32 fits cost ~15 CPU minutes of fixed cost alone",
    "133 s of the tiny run's 183 s reconstruction stage went to the gating system",
    "Each query then waited up to 40 s for a GCS that is not there (measured)",
])
def test_a_narration_is_caught(sentence):
    assert _narrations(sentence)


@pytest.mark.parametrize("sentence", [
    # present-tense prose of this tree that reads close to the patterns
    "a huge vocabulary size fails deep inside a stage with an OverflowError",
    "an index beyond the depth would otherwise fail only inside the conversion",
    "The interval between training progress lines: $NUGGET_PROGRESS_SECONDS or 10 s.",
    "a cell the finding needs was not measured in this run",
    "the lowest vs the highest ratio one training budget measured (the sweep's)",
    "Rough seconds the stage takes: ranks ready stages where no earlier run measured it.",
    "the tokenizer used to train the model",
    "one report table per sentence count (the paper's 1, 3, 5 and any other this run measured)",
    "[B, T, V] at once would be 4 GB for mBART's 250k types",
    "Ray Train waits instead of failing after its default 60 s and restarting the group",
])
def test_present_tense_prose_is_not_flagged(sentence):
    assert not _narrations(sentence)
