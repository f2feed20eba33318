"""What travels to the GPU machine: the wheels it lacks, split into carries; the gpu1 sources."""

from __future__ import annotations

import bz2
import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from benchmarks.gpu_check import wheels
from benchmarks.gpu_check.install import INSTALLED, install_carry
from benchmarks.gpu_check.pack import Unit, assign, group_units
from benchmarks.gpu_check.sources import pack_sources, unpack_sources
from stages.framework import lockfile
from stages.sources.readers import lee_documents, wiki_articles
from stages.sources.registry import SOURCES, deb_root

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


def test_wheels_sharing_a_top_level_name_stay_together_and_carries_balance(tmp_path):
    a = fake_wheel(tmp_path, "google_a", "1", {"google/a/__init__.py": b"x" * 100})
    b = fake_wheel(tmp_path, "google_b", "1", {"google/b/__init__.py": b"x" * 100})
    c = fake_wheel(tmp_path, "solo", "1", {"solo.py": b"", "solo.libs/x.so": b""})
    units = group_units([a, c, b])
    assert sorted(sorted(w.name for w in u.wheels) for u in units) == [[a.name, b.name], [c.name]]
    assert wheels.top_level(c) == {"solo", "solo.libs"}
    sized = [Unit([a], set()), Unit([b], set()), Unit([c], set())]
    bins = assign(sized, [10_000, 10_000])
    assert bins is not None and all(bins)  # the two largest go to different carries
    assert assign(sized, [10, 10]) is None


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


def fake_sources(root: Path) -> Path:
    """The carried sources in their fetched layout, tiny: a gensim wheel with more than its
    readers take, and each Debian package's tree with its marker."""
    lee = SOURCES["gensim_lee"]
    wiki_xml = (b"<mediawiki><page><title>A</title><ns>0</ns><revision><text>Alpha text</text></revision></page>"
                b"</mediawiki>")
    fake_wheel(root / lee.folder, "gensim", lee.version, {
        lee.members[0]: b"first article\nsecond article\n",
        SOURCES["gensim_wiki"].members[0]: bz2.compress(wiki_xml),
        "gensim/models/word2vec.py": b"x" * 5000})
    for name in ("debian_reference", "sword_bible", "python_docs"):
        for package, _ in SOURCES[name].packages:
            tree = root / SOURCES[name].folder(package)
            (tree / "usr").mkdir(parents=True)
            (tree / "usr" / "file.txt").write_text(package)
            (tree / ".complete").write_text("")
    return root


def test_the_sources_pack_slim_and_read_back(tmp_path):
    packed = tmp_path / "packed"
    pack_sources(fake_sources(tmp_path / "src"), packed)
    slim = next(packed.rglob("gensim-*.whl"))
    assert "gensim/models/word2vec.py" not in zipfile.ZipFile(slim).namelist()
    there = tmp_path / "there"
    unpack_sources(packed, there)
    assert lee_documents(there) == ["first article", "second article"]
    assert list(wiki_articles(there)) == [("A", "Alpha text")]
    assert (deb_root(there, "python_docs", "python3.11-doc") / "usr" / "file.txt").read_text() == "python3.11-doc"


def test_install_puts_a_carry_in_its_own_target_and_unpacks_its_sources(tmp_path):
    carry = tmp_path / "carry2"
    fake_wheel(carry / "wheels", "tiny_mod", "1.0", {"tiny_mod/__init__.py": b"VALUE = 7\n"})
    pack_sources(fake_sources(tmp_path / "src"), carry / "sources")
    (carry / "manifest.json").write_text(json.dumps({"wheels": ["tiny_mod-1.0-py3-none-any.whl"]}))
    assert install_carry(carry, tmp_path / "site", tmp_path / "sources") == 0
    target = tmp_path / "site" / "carry2"
    assert (target / INSTALLED).is_file()
    out = subprocess.run([sys.executable, "-c", "import tiny_mod; print(tiny_mod.VALUE)"], capture_output=True,
                         text=True, env={"PYTHONPATH": str(target)})
    assert out.stdout.strip() == "7"
    assert lee_documents(tmp_path / "sources") == ["first article", "second article"]
