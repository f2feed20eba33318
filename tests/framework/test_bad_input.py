"""Bad input fails fast and clearly: one row per case, each asserting the exit code (2 bad
configuration, 3 missing input), that the message names the field, file or value, and
that it failed before Ray started (``connect_ray`` / ``execute`` are never reached).

The loaders' cases (truncated weights, missing adapters) are in
tests/nugget_core/test_loader_errors.py.
"""

from __future__ import annotations

import json
import os
import socket
import sys
from pathlib import Path

import pytest

from pipelines.cli import main_full
from stages.config.uris import TRACKING_SCHEMES

LIST_ONE = "run.targets=[corpus_stats]"  # a one-stage plan: planning stays fast


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _local_lm(tmp: Path, layers: int) -> Path:
    """A local HF model folder with only its config.json: the depth is read from it."""
    folder = tmp / "lm"
    folder.mkdir(exist_ok=True)
    (folder / "config.json").write_text(json.dumps({"model_type": "llama", "num_hidden_layers": layers}))
    return folder


def _read_only_dir(tmp: Path) -> Path:
    folder = tmp / "read-only"
    folder.mkdir(exist_ok=True)
    folder.chmod(0o555)
    if os.access(folder, os.W_OK):  # root writes anyway
        pytest.skip("the user can write into a read-only folder (root); the /proc row covers it")
    return folder


# (id, arguments: tmp -> list, exit code, fragments the error names)
CASES = [
    ("not-finite", lambda t: ["--dry-run", "train.nugget.lr=inf", "train.nugget.weight_decay=inf", "data.bm25.k1=inf",
                              "train.nugget.betas=[0.9,nan]"], 2,
     ["train.nugget.lr: value inf must be a finite number", "train.nugget.weight_decay: value inf",
      "data.bm25.k1: value inf", "train.nugget.betas[1]: value nan"]),
    ("keep-layers-beyond-depth", lambda t: ["--dry-run", "model.lm.keep_layers=1000"], 2,
     ["model.lm.keep_layers", "1000", "30 layers", "SmolLM2"]),
    ("nugget2d-scorer-layer-beyond-depth", lambda t: ["--dry-run", "nugget2d.scorer_layer=500"], 2,
     ["nugget2d.scorer_layer", "500", "30 layers"]),
    ("depth-of-a-local-model", lambda t: ["--dry-run", "model.lm.source=pretrained",
                                          f"model.lm.name_or_path={_local_lm(t, 4)}", "model.lm.keep_layers=6"],
     2, ["model.lm.keep_layers", "6", "4 layers", "lm/config.json"]),
    ("malformed-list", lambda t: ["--dry-run", "run.targets=[report"], 2,
     ["config: run.targets", "[report", "cannot parse"]),
    ("unwritable-root-read-only-dir", lambda t: [f"run.artifact_root={_read_only_dir(t)}/root"], 2,
     ["run.artifact_root", "read-only/root", "not writable"]),
    ("unwritable-root-under-proc", lambda t: ["run.artifact_root=/proc/nugget-root"], 2,
     ["run.artifact_root", "/proc/nugget-root", "not writable"]),
    ("tracking-server-down", lambda t: [f"run.tracking_uri=http://127.0.0.1:{_closed_port()}"], 2,
     ["run.tracking_uri", "http://127.0.0.1:", "no MLflow server answers"]),
    ("tracking-scheme-unknown", lambda t: ["--dry-run", "run.tracking_uri=bogus://user:s3cret@x"], 2,
     ["run.tracking_uri", "bogus://user:***@x", "scheme 'bogus'", "http, https, sqlite"]),
    ("remote-root-with-sqlite", lambda t: ["--dry-run", "run.artifact_root=s3://bucket/nugget",
                                           f"run.tracking_uri=sqlite:///{t}/mlflow.db"], 2,
     ["run.tracking_uri", "sqlite", "s3://bucket/nugget", "cannot share"]),
    ("sources-missing", lambda t: ["--dry-run", f"run.sources_dir={t}/no-sources"], 3,
     ["run.sources_dir", "no-sources", "corpus_stats", "make sources"]),
    ("tracking-store-refused-at-setup", lambda t: [f"run.tracking_uri=file://{t}/mlruns"], 2,
     ["run.tracking_uri=file://", "MlflowException"]),
]


@pytest.mark.parametrize("args, code, fragments", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_input_fails_before_ray_naming_it(tmp_path, sources, monkeypatch, capsys, no_ray, args, code, fragments):
    monkeypatch.delenv("MLFLOW_ALLOW_FILE_STORE", raising=False)  # MLflow's file store then refuses
    argv = [f"run.artifact_root={tmp_path / 'artifacts'}", f"run.sources_dir={sources}", LIST_ONE, *args(tmp_path)]
    if "unwritable-root-under-proc" in str(argv) and not sys.platform.startswith("linux"):
        pytest.skip("/proc is Linux's")
    assert main_full(argv) == code
    err = capsys.readouterr().err
    assert "Traceback" not in err
    for fragment in fragments:
        assert fragment in err, (fragment, err)
    assert "s3cret" not in err


def test_supported_tracking_schemes_are_mlflows():
    from mlflow.tracking._tracking_service.utils import _tracking_store_registry

    assert set(TRACKING_SCHEMES) == set(_tracking_store_registry._registry) - {""}


# --- input files read by stages: the message names the file (and line) -----------------
def _tokenizer(folder: Path) -> Path:
    from nugget_core.tokenizer import train_bpe_tokenizer

    train_bpe_tokenizer(["a small corpus of words", "more words here"] * 20, vocab_size=300).save_pretrained(folder)
    return folder


def test_a_corrupted_tokenizer_json_is_named_before_ray_data(tmp_path, no_ray):
    from stages.corpora.tokens import encode_texts

    folder = _tokenizer(tmp_path / "tokenizer")
    (folder / "tokenizer.json").write_text('{"version": "1.0", "trunc')
    with pytest.raises(ValueError, match=rf"{folder / 'tokenizer.json'}: not valid JSON"):
        encode_texts(["some text"], folder)  # raises in this process, before any Ray Data task


DOCS = "L0\tquery text\nR0\tpositive\nR1\tnegative\n"


@pytest.mark.parametrize(
    "tasks, expected",
    [
        ('{"source": "L0", "candidates": ["R0", "R1"], "answer": 0}\nnot json\n', r"task\.jsonl:2: not a JSON object"),
        ('{"source": "L0", "candidates": "R0", "answer": 0}\n', r"task\.jsonl:1: candidates: expected a list"),
        ('{"source": "L0", "candidates": ["R0", "R9"], "answer": 0}\n', r"task\.jsonl:1: document id\(s\) \['R9'\] "
                                                                         r"are not in .*docs\.txt"),
        ('{"source": "L0", "candidates": ["R0", "R1"], "answer": "0"}\n', r"task\.jsonl:1: answer: expected"),
        ('{"source": "L0", "candidates": ["R0"], "answer": 3}\n', r"task\.jsonl:1: task L0: answer 3 outside"),
        ('["L0", "R0"]\n', r"task\.jsonl:1: expected a JSON object"),
    ],
    ids=["garbage-line", "candidates-a-string", "unknown-doc-id", "answer-a-string", "answer-out-of-range", "not-an-object"],
)
def test_bad_nugget_data_tasks_name_file_and_line(tmp_path, tasks, expected):
    from stages.corpora.nugget_data import read_tasks

    (tmp_path / "docs.txt").write_text(DOCS)
    (tmp_path / "task.jsonl").write_text(tasks)
    with pytest.raises(ValueError, match=expected):
        read_tasks(tmp_path / "task.jsonl")


def test_blank_lines_of_nugget_data_are_skipped(tmp_path):
    from stages.corpora.nugget_data import read_docs, read_tasks

    (tmp_path / "docs.txt").write_text(DOCS + "\n")
    (tmp_path / "task.jsonl").write_text('{"source": "L0", "candidates": ["R0", "R1"], "answer": 0}\n\n  \n')
    assert [t.candidates for t in read_tasks(tmp_path / "task.jsonl")] == [("R0", "R1")]
    assert len(read_docs(tmp_path / "docs.txt")) == 3
