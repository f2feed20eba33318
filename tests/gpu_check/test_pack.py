"""What travels to the GPU machine: the wheels it lacks, SmolLM2 in two parts, and how call 2 joins them."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from benchmarks.gpu_check import wheels
from benchmarks.gpu_check.calls import DATA, GGUF
from benchmarks.gpu_check.handoff import assemble, stash
from benchmarks.gpu_check.pack import split_point
from stages.framework import lockfile

REPO = Path(__file__).resolve().parents[2]


def fake_wheel(folder: Path, name: str, version: str, members: dict[str, bytes]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}-{version}-py3-none-any.whl"
    dist = f"{name}-{version}.dist-info"
    files = {**members, f"{dist}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n".encode(),
             f"{dist}/WHEEL": b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
    record = "".join(f"{n},,\n" for n in files) + f"{dist}/RECORD,,\n"
    with zipfile.ZipFile(path, "w") as z:
        for n, data in files.items():
            z.writestr(n, data)
        z.writestr(f"{dist}/RECORD", record)
    return path


def test_the_runtime_closure_leaves_out_the_image_and_dev_tools():
    closure = wheels.runtime_closure(sys.executable, REPO / "pyproject.toml")
    need = wheels.needed(closure, wheels.image_packages())
    assert {"ray", "mlflow", "deepspeed", "omegaconf", "datasets", "bm25s", "rouge-score"} <= set(need)
    assert not {"moto", "cfn-lint", "s3fs", "boto3", "ruff", "pytest", "torch", "transformers"} & set(need)
    assert not set(wheels.NOT_CARRIED) & set(need)
    with pytest.raises(SystemExit, match="not installed in the venv"):
        wheels.needed({"ray": None}, set())


def test_the_carried_versions_are_the_cuda_locks_for_the_images_python():
    pins = lockfile.parse("numpy==2.4.6 ; python_full_version < '3.12'\n"
                          "numpy==2.5.5 ; python_full_version >= '3.12'\nray==2.60.0\n")
    assert wheels.locked_for_image({"numpy": "2.4.6", "ray": "2.59.0"}, pins) == {"numpy": "2.5.5", "ray": "2.60.0"}
    with pytest.raises(SystemExit, match=r"\['omegaconf'\] are not in requirements/cuda.lock.txt"):
        wheels.locked_for_image({"omegaconf": "2.3.0", "ray": "2.60.0"}, pins)
    need = wheels.needed(wheels.runtime_closure(sys.executable, REPO / "pyproject.toml"), wheels.image_packages())
    assert set(wheels.locked_for_image(need, lockfile.read("cuda"))) == set(need)


def test_the_wheels_call_2_carries_are_gguf_and_what_the_image_lacks_of_its_needs():
    need = wheels.needed(wheels.closure(sys.executable, ["gguf"]), wheels.image_packages())
    assert "gguf" in need and not {"numpy", "pyyaml", "tqdm", "requests"} & set(need)  # the image has those


def test_the_gguf_is_cut_where_both_carries_keep_the_same_room():
    mib = 2**20
    first = split_point(94 * mib, used1=8 * mib, used2=mib, room=55 * mib)
    assert first + 8 * mib == 94 * mib - first + mib  # the same fill on both sides
    assert 0 < first < 94 * mib
    with pytest.raises(SystemExit, match="do not fit two carries"):
        split_point(94 * mib, used1=8 * mib, used2=mib, room=50 * mib)


def packed_pair(tmp_path: Path, payload: bytes, cut: int) -> tuple[Path, Path]:
    """Two carries as `pack` leaves them: the GGUF's parts, the data, carry 2's wheel and sha."""
    carry1, carry2 = tmp_path / "carry1", tmp_path / "carry2"
    (carry1 / DATA).mkdir(parents=True)
    (carry1 / DATA / "manifest.json").write_text("{}")
    (carry1 / f"{GGUF}.part1").write_bytes(payload[:cut])
    fake_wheel(carry2 / "wheels", "tiny_mod", "1.0", {"tiny_mod/__init__.py": b"VALUE = 7\n"})
    (carry2 / f"{GGUF}.part2").write_bytes(payload[cut:])
    sha = hashlib.sha256(payload).hexdigest()
    for carry in (carry1, carry2):
        (carry / "manifest.json").write_text(json.dumps({"gguf_sha256": sha}))
    return carry1, carry2


def test_call_2_joins_what_call_1_left_checks_it_and_installs_its_wheels(tmp_path):
    payload = bytes(range(256)) * 1000
    carry1, carry2 = packed_pair(tmp_path, payload, 100_001)
    scratch, site = tmp_path / "tmp", tmp_path / "site"
    assert stash(carry1, scratch) == 0 and (scratch / DATA / "manifest.json").is_file()
    assert assemble(carry2, scratch, site) == 0
    assert (scratch / GGUF).read_bytes() == payload
    out = subprocess.run([sys.executable, "-c", "import tiny_mod; print(tiny_mod.VALUE)"], capture_output=True,
                         text=True, env={"PYTHONPATH": str(site / "carry2")})
    assert out.stdout.strip() == "7"


def test_call_2_refuses_a_part_from_another_pack_or_a_missing_call_1(tmp_path, capsys):
    carry1, carry2 = packed_pair(tmp_path / "a", b"a" * 5000, 2000)
    other1, _ = packed_pair(tmp_path / "b", b"b" * 5000, 2000)
    scratch = tmp_path / "tmp"
    assert assemble(carry2, scratch, tmp_path / "site") == 2
    assert "call 1 did not run on this machine" in capsys.readouterr().err
    stash(other1, scratch)
    assert assemble(carry2, scratch, tmp_path / "site") == 3
    assert "from another pack" in capsys.readouterr().err and not (scratch / GGUF).exists()


def test_ray_is_slimmed_and_its_record_follows(tmp_path):
    ray = fake_wheel(tmp_path / "in", "ray", "2.0", {"ray/__init__.py": b"", "ray/jars/x.jar": b"j" * 1000,
                                                     "ray/rllib/a.py": b"", "ray/train/b.py": b""})
    out = wheels.copy_wheel(ray, tmp_path)
    with zipfile.ZipFile(out) as z:
        names = z.namelist()
        record = z.read("ray-2.0.dist-info/RECORD").decode()
    assert "ray/train/b.py" in names and "ray/jars/x.jar" not in names and "ray/rllib/a.py" not in names
    assert "ray/jars" not in record and "ray/train/b.py" in record
    assert wheels.find_wheel(tmp_path, "ray", "2.0") == out and wheels.find_wheel(tmp_path, "ray", "2.1") is None
