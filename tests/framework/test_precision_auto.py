"""``auto`` precision (`stages.config.precision`): bf16 where the hardware multiplies bf16
natively, fp32 elsewhere, decided when the config loads, so that the cache key names the
precision a stage computed in."""

from __future__ import annotations

import pytest

from stages.config import load_config
from stages.config import precision as precision_module
from stages.config.precision import (
    CpuBf16,
    bf16_support,
    read_cpu_flags,
    resolve,
    resolve_precisions,
)

AMX = CpuBf16(True, "test: amx_bf16")
AVX2 = CpuBf16(False, "test: avx2 only")


@pytest.mark.parametrize(("flags", "native"), [
    ({"fpu", "avx2", "amx_bf16", "amx_tile"}, True),  # Sapphire Rapids
    ({"fpu", "avx2", "avx512f", "avx512_bf16"}, True),  # Cooper Lake, Zen 4
    ({"fp", "asimd", "bf16"}, True),  # Arm v8.6 (Graviton 3)
    ({"fpu", "avx2", "fma"}, False),  # the AMD EPYC (Zen 2 / 3) of some of these machines
    (None, False),  # no /proc/cpuinfo
])
def test_bf16_support_from_the_cpu_flags(flags, native):
    found = bf16_support(None if flags is None else frozenset(flags))
    assert found.native is native
    assert found.why  # the evidence, in words, for the log line


def test_cpu_flags_are_read_from_the_x86_and_arm_lines(tmp_path):
    x86 = tmp_path / "x86"
    x86.write_text("processor\t: 0\nflags\t\t: fpu avx2 amx_bf16\n\nprocessor\t: 1\nflags\t\t: fpu\n")
    arm = tmp_path / "arm"
    arm.write_text("processor\t: 0\nFeatures\t: fp asimd bf16\n")
    assert read_cpu_flags(x86) == frozenset({"fpu", "avx2", "amx_bf16"})  # the first CPU's
    assert read_cpu_flags(arm) == frozenset({"fp", "asimd", "bf16"})
    assert read_cpu_flags(tmp_path / "missing") is None


def test_auto_follows_the_device_and_the_cpu():
    assert resolve("auto", on_gpu=True, cpu=AVX2) == "bf16"
    assert resolve("auto", on_gpu=False, cpu=AMX) == "bf16"
    assert resolve("auto", on_gpu=False, cpu=AVX2) == "fp32"
    assert resolve("fp32", on_gpu=True, cpu=AMX) == "fp32"  # an explicit value is kept
    assert resolve("bf16", on_gpu=False, cpu=AVX2) == "bf16"


def test_load_config_resolves_every_auto_before_the_keys(monkeypatch):
    """Jobs and evaluations saying auto: the loaded config holds the machine's answer, and a
    GPU job's auto is bf16 whatever the CPU."""
    overrides = ["train.nugget.precision=auto", "train.nugget2d.precision=auto", "eval.dtype=auto",
                 "train.full_ft.precision=auto", "train.full_ft.use_gpu=true"]
    monkeypatch.setattr(precision_module, "cpu_bf16", lambda: AVX2)
    plain = load_config(overrides, check=False)
    assert (plain.train.nugget.precision, plain.train.nugget2d.precision, plain.eval.dtype) == ("fp32",) * 3
    assert plain.train.full_ft.precision == "bf16"
    monkeypatch.setattr(precision_module, "cpu_bf16", lambda: AMX)
    native = load_config(overrides, check=False)
    assert (native.train.nugget.precision, native.train.nugget2d.precision, native.eval.dtype) == ("bf16",) * 3


def test_resolve_precisions_names_what_it_chose():
    cfg = load_config(["train.nugget.precision=fp32", "eval.dtype=fp32"])
    cfg.train.nugget.precision, cfg.eval.dtype = "auto", "auto"
    chosen = resolve_precisions(cfg, AVX2)
    assert chosen == {"train.nugget.precision": "fp32", "eval.dtype": "fp32"}
    assert resolve_precisions(cfg, AMX) == {}  # nothing auto is left


def test_the_cache_key_follows_the_resolved_precision(monkeypatch):
    from stages.corpora.corpus_stats import CorpusStats
    from stages.framework.keys import cache_key
    from stages.nugget.train_nugget import TrainNugget

    ups = {u: "f" * 20 for u in TrainNugget.upstream}
    keys = {}
    for cpu in (AVX2, AMX):
        monkeypatch.setattr(precision_module, "cpu_bf16", lambda cpu=cpu: cpu)
        cfg = load_config(["train.nugget.precision=auto"])
        keys[cpu.native] = (cache_key(TrainNugget, cfg, ups), cache_key(CorpusStats, cfg, {}))
    assert keys[True][0] != keys[False][0]  # bf16 and fp32 training never share an output
    assert keys[True][1] == keys[False][1]  # a stage reading no precision is not re-keyed
