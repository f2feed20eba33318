"""Config system: groups, profiles, overrides, and errors that name the key."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from pipelines.cli import main_full
from stages.config import ConfigError, load_config, to_yaml
from stages.nugget.artifacts.data import MtDocuments
from tests.extras import HARNESS_OFF

REPO = Path(__file__).resolve().parents[2]


def test_tiny_is_default_and_groups_are_applied():
    cfg = load_config([])
    assert cfg.profile == "tiny"
    assert cfg.model.seq2seq.source == "tiny_random"  # from conf/model/tiny.yaml
    assert cfg.train.nugget.lr == pytest.approx(1e-3)  # from conf/train/tiny.yaml
    assert cfg.run.num_cpus == 2  # from conf/profile/tiny.yaml body


def test_paper_nugget_lm_eval_gives_every_token_its_longest_context():
    """Nugget app. B.2: at inference, "as many preceding tokens as possible in the current
    segment ..., up to 128 tokens": token t reads min(t, s - 1) tokens before it in its window."""
    from nugget_core.nugget import windows

    cfg = load_config(["profile=paper"])
    s = cfg.train.nugget_lm.segment_tokens
    context = {t: t - w.start for w in windows(0, 3 * s + 5, s, cfg.eval.nugget_lm.stride)
               for t in range(w.score_from, w.end)}
    assert context == {t: min(t, s - 1) for t in range(3 * s + 5)}


def test_paper_profile_has_paper_settings():
    cfg = load_config(["profile=paper"])
    assert cfg.model.seq2seq.name_or_path == "facebook/mbart-large-50-many-to-many-mmt"
    assert cfg.model.lm.name_or_path == "meta-llama/Llama-2-7b-hf"
    assert cfg.train.nugget.lr == pytest.approx(5e-5)
    assert cfg.train.nugget2d.backend == "deepspeed"
    assert cfg.train.nugget2d.betas == [0.9, 0.95]
    assert cfg.nugget2d.lora_rank == 32
    assert cfg.train.sweep.ratios == [0.05, 0.1, 0.15, 0.25]
    assert cfg.data.mt.source == "wmt19"
    assert cfg.eval.max_tasks == 1024  # PI / RR: 1024 queries per task (Nugget table 1), not every built one
    assert cfg.eval.qa.match == "substring"  # appendix D
    longest = max(c.compressed_tokens + c.context_tokens for c in cfg.eval.lm.contexts)
    assert cfg.data.lm.distant_tokens >= longest == 704  # table 1's 640 + 64 fit a segment's history
    for method in (cfg.nugget, cfg.nugget2d):  # eq. 5: (q k^T + s) / sqrt(d), in the forward pass
        assert (method.residual, method.scale_residual) == ("direct", True)
    # Nugget2D §6.2: the 5x QA model is trained at r = 0.2; §2.5: the AR model reuses the
    # autoencoding compressor's scorer, which sees in AR mode the context it was trained on
    assert cfg.train.nugget2d.extra_ratios == [0.2] and 0.2 in cfg.eval.qa.nugget_ratios
    assert (cfg.train.nugget2d.objective, cfg.train.nugget2d.ar_scorer) == ("continuation", "autoencoding")
    assert cfg.nugget2d.scorer_window == cfg.data.lm.doc_tokens == 512
    # §5.1: Full and Compressive trained with the AR model's configuration, decoded with their weights
    assert cfg.train.nugget2d_ar.baselines == ["full", "compressive"] and cfg.eval.lm.baseline_adapter == "trained"
    assert cfg.data.mt.dev_split == "validation" and cfg.data.mt.dev_fraction == 0  # WMT19's official dev set


def test_gpu1_profile_puts_every_model_on_one_gpu_in_bf16():
    cfg = load_config(["profile=gpu1"])
    assert cfg.run.device == "auto" and cfg.eval.dtype == "bf16"
    jobs = {name: getattr(cfg.train, name) for name in
            ("nugget", "nugget2d", "nugget2d_ar", "nugget2d_ft", "full_ft", "baselines")}
    for name, job in jobs.items():
        assert (job.use_gpu, job.num_workers, job.precision, job.max_grad_norm) == (True, 1, "bf16", 1.0), name
    assert cfg.train.sweep.max_concurrent_trials == 1  # one GPU: trials one after another
    assert (cfg.model.seq2seq.tiny.d_model, cfg.model.seq2seq.tiny.layers) == (512, 6)
    assert cfg.data.max_docs == 0 and cfg.model.lm.source == "smollm2_offline"
    assert cfg.train.nugget2d_ft.max_doc_tokens == cfg.eval.summarization.max_doc_tokens


def test_gpu1_dry_run_prints_the_whole_plan(tmp_path, capsys, monkeypatch):
    from pipelines.cli import main_full

    monkeypatch.setenv("NUGGET_CLUSTER_RESOURCES", '{"CPU": 16, "GPU": 1}')  # the GPU the profile is for
    from stages.registry import DAG

    args = ["--dry-run", "profile=gpu1", f"run.artifact_root={tmp_path}", f"run.sources_dir={tmp_path}", *HARNESS_OFF]
    assert main_full(args) == 0
    plan = capsys.readouterr().out
    graph = DAG.for_config(load_config(args[1:]))  # 37 stages, 36 without the harness extra
    assert len(DAG.order) == 37 and len(graph.order) == 37 - len(HARNESS_OFF)
    assert f"plan ({len(graph.order)} stages" in plan and all(f"  {name} " in plan for name in graph.order)


def test_overrides_and_group_swap_win_in_order():
    # model=paper brings a chat model: the AR scorer must then come from an autoencoding variant
    cfg = load_config(["model=paper", "nugget.ratio=0.25", "nugget.scorer_layer=6", "train.nugget2d.ar_scorer=autoencoding"])
    assert cfg.model.seq2seq.source == "pretrained"
    assert cfg.nugget.ratio == 0.25 and cfg.nugget.scorer_layer == 6
    assert "ratio: 0.25" in to_yaml(cfg)


@pytest.mark.parametrize(
    "override, expected",
    [
        ("nugget.rato=0.1", "nugget.rato: Key 'rato' not in 'NuggetSection'"),
        ("nugget.ratio=abc", "nugget.ratio: Value 'abc'"),
        ("nugget.ratio=0", "nugget.ratio: value 0.0 must be > 0.0"),
        ("nugget.ratio=1.5", "nugget.ratio: value 1.5 must be <= 1.0"),
        ("train.nugget.num_workers=0", "train.nugget.num_workers: value 0 must be >= 1"),
        ("nugget.residual=sideways", "nugget.residual: value 'sideways' is not one of"),
        ("nugget.scorer_layer=9", "nugget.scorer_layer: value 9 exceeds model.seq2seq.tiny.layers=4"),
        ("train.nugget2d_ft.objective=continuation", "train.nugget2d_ft.objective: must be 'finetune'"),
        ("train.full_ft.finetune_task=qa", "train.full_ft.finetune_task: value 'qa'; eval_summarization needs"),
        ("model=nope", "model='nope' is not an option; available: ['gpu1', 'paper', 'small', 'tiny']"),
        ("profile=huge", "profile='huge' is not an option"),
        ("no_equals_sign", "override 'no_equals_sign' is not of the form key=value"),
    ],
)
def test_bad_values_name_the_key(override, expected):
    with pytest.raises(ConfigError) as err:
        load_config([override])
    assert expected in str(err.value)


def test_bad_yaml_file_names_the_file(tmp_path):
    conf = tmp_path / "conf"
    for group in ("profile", "model"):
        (conf / group).mkdir(parents=True)
    (conf / "profile" / "tiny.yaml").write_text("defaults:\n  model: broken\n")
    (conf / "model" / "broken.yaml").write_text("seq2seq:\n  tiny:\n    d_model: wide\n")
    with pytest.raises(ConfigError) as err:
        load_config([], conf_dir=conf)
    assert "broken.yaml" in str(err.value) and "model.seq2seq.tiny.d_model" in str(err.value)


def test_cli_config_error_exits_2(capsys):
    assert main_full(["nugget.ratio=0"]) == 2
    assert "nugget.ratio: value 0.0 must be > 0.0" in capsys.readouterr().err


@pytest.mark.parametrize("override", ["nugget.ratio=1.5", "nugget.bogus=1"])
def test_script_exit_code_is_nonzero(override):
    done = subprocess.run(
        [sys.executable, "pipelines/full.py", override], cwd=REPO, capture_output=True, text=True
    )
    assert done.returncode == 2
    assert "error: config:" in done.stderr and "nugget." in done.stderr
    assert "Ray" not in done.stdout + done.stderr  # failed before any Ray started


# ------------------------------------------------ model configs: nugget_core's, embedded

def _model_configs():
    from nugget_core import NuggetConfig, TinyBartSpec
    from nugget_core.nugget2d import Nugget2DConfig

    return [("nugget", NuggetConfig), ("nugget2d", Nugget2DConfig), ("model.seq2seq.tiny", TinyBartSpec)]


def _section(cfg, key):
    node = cfg
    for part in key.split("."):
        node = getattr(node, part)
    return node


def _other_value(field, default):
    """A valid value != ``default`` for a derived section field (from its metadata)."""
    meta = field.metadata
    if "choices" in meta:
        return next(c for c in meta["choices"] if c != default)
    if isinstance(default, bool):
        return not default
    if isinstance(default, list):
        return default[:1] + ["extra_proj"]
    if "float" in str(field.type):
        return 0.37 if default != 0.37 else 0.5
    return (default or 4) + 1


def _override(key, value):
    if isinstance(value, list):
        return f"{key}=[{','.join(value)}]"
    return f"{key}={str(value).lower() if isinstance(value, bool) else value}"


def test_model_sections_have_exactly_nugget_core_fields():
    import dataclasses

    cfg = load_config([])
    for key, core in _model_configs():
        section = _section(cfg, key)
        assert [f.name for f in dataclasses.fields(section)] == [f.name for f in dataclasses.fields(core)], key
        assert all(f.metadata["help"] for f in dataclasses.fields(section)), f"{key}: nugget_core field without help"
        built = section.build()
        assert type(built) is core and dataclasses.asdict(core(**dataclasses.asdict(section))) == dataclasses.asdict(built)


@pytest.mark.parametrize("key, core", _model_configs(), ids=lambda x: x if isinstance(x, str) else "")
def test_every_model_config_field_is_settable_and_reaches_nugget_core(key, core):
    """``<section>.<field>=...`` for every field of NuggetConfig / Nugget2DConfig /
    TinyBartSpec lands in the nugget_core object built the way the tasks build it."""
    import dataclasses

    default = _section(load_config([]), key)
    for f in dataclasses.fields(default):
        value = _other_value(f, getattr(default, f.name))
        cfg = load_config([_override(f"{key}.{f.name}", value)])
        built = core(**dataclasses.asdict(_section(cfg, key)))  # as the training tasks do (stages/*/*_task.py)
        assert getattr(built, f.name) == value, (key, f.name)


def test_nugget_task_builds_its_config_from_the_section():
    from stages.nugget.nugget_task import NuggetTask

    cfg = load_config(["nugget.residual=direct", "nugget.scorer_hidden=12", "nugget.selector=chunk"])
    built = NuggetTask(MtDocuments(Path("d")), "t", "ae", cfg.nugget, cfg.model.seq2seq).nugget_config()
    assert (built.residual, built.scorer_hidden, built.selector) == ("direct", 12, "chunk")


@pytest.mark.parametrize(
    "override, expected",
    [
        ("nugget.selector=random", "nugget.selector: value 'random' is not one of ['chunk', 'sentence', 'topk']"),
        ("nugget.scorer_hidden=0", "nugget.scorer_hidden: value 0 must be >= 1"),
        ("nugget2d.ratio=1.5", "nugget2d.ratio: value 1.5 must be <= 1.0"),
        ("nugget2d.lora_dropout=1.0", "nugget2d.lora_dropout: value 1.0 must be < 1.0"),
        ("nugget2d.scorer_window=0", "nugget2d.scorer_window: value 0 must be >= 1"),
        ("nugget2d.lora_target_modules=[]", "nugget2d.lora_target_modules: must not be empty"),
        ("nugget2d.threshold=nan", "nugget2d.threshold: rejected by Nugget2DConfig: Nugget2DConfig.threshold=nan"),
        ("nugget2d.max_nuggets=two", "nugget2d.max_nuggets: Value 'two'"),
        ("nugget2d.bogus=1", "nugget2d.bogus: Key 'bogus' not in 'Nugget2DSection'"),
        ("model.seq2seq.tiny.heads=0", "model.seq2seq.tiny.heads: value 0 must be >= 1"),
        ("model.seq2seq.tiny.attn_implementation=flash", "model.seq2seq.tiny.attn_implementation: value 'flash'"),
        ("eval.calibration.bins=10", "eval.calibration moved to calibrate.threshold"),
        ("eval.baselines.train.lr=0.1", "eval.baselines.train moved to train.baselines"),
        ("model.seq2seq.tiny.tokenizer_vocab_size=300", "moved to model.seq2seq.tokenizer_vocab_size"),
        ("calibrate.threshold.heldout_split=train", "calibrate.threshold.heldout_split: value 'train' must differ"),
        ("train.baselines.num_workers=0", "train.baselines.num_workers: value 0 must be >= 1"),
        ("data.lm.distant_tokens=40", "eval.lm.contexts[0]: compressed_tokens + context_tokens = 48 exceeds "
                                      "data.lm.distant_tokens=40"),
        ("nugget.scale_residual=maybe", "nugget.scale_residual"),
        ("train.nugget2d.extra_ratios=[0.1]", "train.nugget2d.extra_ratios: 0.1 is nugget2d.ratio"),
        ("train.nugget2d.extra_ratios=[0.3,0.3]", "train.nugget2d.extra_ratios: [0.3, 0.3] repeats a ratio"),
        ("train.nugget2d.extra_ratios=[1.5]", "train.nugget2d.extra_ratios: value 1.5 must be in (0, 1]"),
        ("train.nugget2d.ar_scorer=phi", "train.nugget2d.ar_scorer: value 'phi' is not one of"),
        ("eval.lm.baseline_adapter=trained", "eval.lm.baseline_adapter: 'trained' needs "
                                             "train.nugget2d_ar.baselines to include ['full', 'compressive']"),
        ("train.nugget2d_ar.baselines=[full,full]", "train.nugget2d_ar.baselines: ['full', 'full'] repeats"),
        ("train.nugget2d_ar.baselines=[rmt]", "train.nugget2d_ar.baselines: value 'rmt' is not one of"),
    ],
)
def test_bad_model_and_moved_keys_name_the_full_key(override, expected):
    with pytest.raises(ConfigError) as err:
        load_config([override])
    assert expected in str(err.value)


@pytest.mark.parametrize("profile", ["tiny", "small", "paper"])
def test_moved_sections_load_in_both_profiles(profile):
    """train.baselines (was eval.baselines.train) and calibrate.threshold (was
    eval.calibration): set by conf/ in both profiles, overridable, read by their stages."""
    from stages.framework.keys import stage_sections
    from stages.registry import DAG

    cfg = load_config([f"profile={profile}"])
    expected = {"tiny": (1e-3, 30, 64), "small": (2e-3, 150, 64), "paper": (5e-5, 200000, 1024)}[profile]  # paper: train.nugget's rule
    assert (cfg.train.baselines.lr, cfg.train.baselines.max_steps, cfg.calibrate.threshold.sample_docs) == \
        pytest.approx(expected)
    assert cfg.eval.baselines.systems  # the choice of systems stays with the evaluations
    cfg = load_config([f"profile={profile}", "train.baselines.max_steps=7", "calibrate.threshold.bins=9",
                       "model.seq2seq.tokenizer_vocab_size=512"])
    assert (cfg.train.baselines.max_steps, cfg.calibrate.threshold.bins) == (7, 9)
    assert stage_sections(DAG.get("train_baselines"), cfg)["train.baselines"].max_steps == 7
    assert stage_sections(DAG.get("calibrate_threshold"), cfg)["calibrate.threshold"].bins == 9
    assert DAG.get("train_baselines").train_job == "train.baselines"
    for name in DAG.order:  # every declared key resolves (dry run: load only)
        stage_sections(DAG.get(name), cfg)


def test_every_conf_yaml_starts_with_its_run_command_and_a_valid_override():
    import shlex

    for path in sorted((REPO / "conf").glob("*/*.yaml")):
        head = []
        for line in path.read_text().splitlines():
            if not line.startswith("#"):
                break
            head.append(line.lstrip("# ").rstrip(" \\"))
        text = " ".join(head)
        assert "Run:" in text and "Override:" in text, path
        override = text.split("Override:", 1)[1]
        args = [a for a in shlex.split(override.split("(", 1)[0]) if "=" in a]
        assert args, path
        load_config(args)  # the example is a valid command line


def test_loading_the_config_imports_no_torch():
    """The schema reads nugget_core's config dataclasses through its lazy package."""
    code = ("import sys; from stages.config import load_config; load_config(['profile=paper']); "
            "bad = [m for m in ('torch', 'transformers', 'peft') if m in sys.modules]; print(bad); sys.exit(bool(bad))")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_stage_own_config_errors_stop_only_runs_that_include_it(tmp_path, capsys):
    """train_nugget_lm needs train_nugget's AE model; an MT train_nugget alone is fine."""
    from pipelines.cli import main_full

    base = ["--dry-run", f"run.artifact_root={tmp_path}", f"run.sources_dir={tmp_path}", "train.nugget.objective=mt"]
    assert main_full(base) == 2
    assert "train_nugget_lm: train.nugget.objective: value 'mt'" in capsys.readouterr().err
    assert main_full([*base, "run.targets=[train_nugget]"]) == 0
    assert main_full(["--dry-run", f"run.artifact_root={tmp_path}", f"run.sources_dir={tmp_path}",
                      "eval.baselines.systems=[chunk]"]) == 2
    assert "'tsdae' starts from train_baselines' tsdae_ae" in capsys.readouterr().err


def test_list_fields_get_bounds_per_element_and_unique():
    from stages.config import load_config
    from stages.config.validate import ConfigError

    with pytest.raises(ConfigError) as err:
        load_config(["train.nugget_lm.histories=[1,0,1]", "train.nugget_lm.ratios=[0.05,1.5]",
                     "eval.nugget_lm.histories=[2,2]"])
    text = str(err.value)
    assert "train.nugget_lm.histories: value 0 must be >= 1" in text
    assert "train.nugget_lm.histories: [1, 0, 1] repeats a value" in text
    assert "train.nugget_lm.ratios: value 1.5 must be <= 1.0" in text
    assert "eval.nugget_lm.histories: [2, 2] repeats a value" in text


def test_small_profile_scores_rows_its_settings_were_not_chosen_on():
    """profile=small's settings were chosen on dev data: its Nugget tables read the test split, its
    Nugget2D tasks the test split, and its sweep trains AE models at the default scorer layer at two
    ratios (the fig. 4 finding compares them)."""
    cfg = load_config(["profile=small"])
    assert cfg.eval.nugget_split == "test"
    assert {cfg.eval.qa.split, cfg.eval.summarization.split, cfg.eval.autoencoding.split, cfg.eval.lm.split} == {"test"}
    assert cfg.nugget.scorer_layer in cfg.train.sweep.scorer_layers and len(cfg.train.sweep.ratios) >= 2
    assert cfg.train.nugget.export_model == "best_dev"
