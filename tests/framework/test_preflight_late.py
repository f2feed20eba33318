"""Problems that used to surface only after Ray started (exit 1, or a traceback that named
no config key), refused by the preflight instead: ``--dry-run`` shows them, one line each
naming the key and the value, exit 2 (configuration) or 3 (missing input). Each drives the
CLI with nothing but config, environment and the file system, as a user would; the unit
tests of the checks are in tests/framework/test_preflight_checks.py."""

from __future__ import annotations

import json
import os
import shutil
import socket
import tempfile
from collections import namedtuple

from pipelines.cli import main_full

ONE = "run.targets=[corpus_stats]"


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _dry_run(args: list[str], capsys) -> tuple[int, str]:
    code = main_full(["--dry-run", *args])
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return code, err


def test_cuda_on_a_run_without_gpus_is_refused(base_args, monkeypatch, capsys, no_ray):
    monkeypatch.setenv("NUGGET_CLUSTER_RESOURCES", json.dumps({"CPU": 4, "GPU": 0}))  # the run's GPUs: none
    code, err = _dry_run([*base_args, "run.targets=[eval_reconstruction]", "run.device=cuda"], capsys)
    assert code == 2, err
    assert ("run.device='cuda': eval_reconstruction needs 1 GPU(s) at once but $NUGGET_CLUSTER_RESOURCES has 0; "
            "set run.device=auto or cpu") in err
    code, err = _dry_run([*base_args, "run.targets=[train_nugget]", "train.nugget.use_gpu=true"], capsys)
    assert code == 2 and "train.nugget.use_gpu=true (num_workers=1): train_nugget needs 1 GPU(s)" in err, err
    assert _dry_run([*base_args, "run.targets=[eval_reconstruction]", "run.device=auto"], capsys)[0] == 0


def test_a_hub_that_does_not_answer_is_named_with_the_field(base_args, monkeypatch, capsys, no_ray):
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{_closed_port()}")
    for name in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE"):
        monkeypatch.delenv(name, raising=False)
    code, err = _dry_run([*base_args, "run.targets=[build_mt_docs]", "data.mt.source=wmt19"], capsys)
    assert code == 3, err
    assert ("data.mt.local_files='' (empty, with data.mt.source='wmt19') loads the hub dataset 'wmt19' by name, not "
            "in the local Hugging Face cache, and the hub at http://127.0.0.1:") in err
    assert "(read by tokenizer, build_mt_docs)" in err
    model = ["run.targets=[prepare_lm]", "model.lm.source=pretrained", "model.lm.name_or_path=no-such-org/no-model"]
    code, err = _dry_run([*base_args, *model], capsys)
    assert code == 3 and "model.lm.name_or_path='no-such-org/no-model' is not a local folder: a hub model id" in err
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")  # switched off: said without asking the hub
    code, err = _dry_run([*base_args, "run.targets=[build_mt_docs]", "data.mt.source=wmt19"], capsys)
    assert code == 3 and "HF_DATASETS_OFFLINE=1 forbids downloading it" in err, err


def test_a_full_disk_under_the_root_is_named(base_args, root, monkeypatch, capsys, no_ray):
    usage = namedtuple("usage", "total used free")
    monkeypatch.setattr(shutil, "disk_usage", lambda path: usage(1 << 30, (1 << 30) - (5 << 20), 5 << 20))
    code, err = _dry_run([*base_args, ONE], capsys)
    assert code == 2, err
    assert f"run.artifact_root (256 MiB: no planned stage ran here before): {root} has 5 MiB free" in err


def test_a_read_only_stage_folder_is_named(base_args, root, monkeypatch, capsys, no_ray):
    folder = root / "corpus_stats"
    folder.mkdir(parents=True)
    folder.chmod(0o555)
    if os.access(folder, os.W_OK):  # root writes anyway: the folder refuses files as a read-only one would
        create = tempfile.mkstemp

        def refuse(*args, dir=None, **kwargs):  # noqa: A002 (mkstemp's own name)
            if dir is not None and os.path.samefile(dir, folder):
                raise PermissionError(13, "Permission denied")
            return create(*args, dir=dir, **kwargs)

        monkeypatch.setattr(tempfile, "mkstemp", refuse)
    try:
        code, err = _dry_run([*base_args, ONE], capsys)
    finally:
        folder.chmod(0o755)
    assert code == 2, err
    assert f"run.artifact_root: {folder} (the folder of stage corpus_stats) is not writable: Permission denied" in err
