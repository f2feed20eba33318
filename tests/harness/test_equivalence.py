"""With every token kept, the ``nugget2d`` harness model's per-request answers equal lm_eval's
own ``hf`` model's on the same local tasks: the plain LM as ``system=full, ratio=1`` and an
untrained Nugget2D folder (LoRA B = 0, straight-through residual: phi = theta = the base LM)
as ``system=nugget2d, ratio=1``, in both context modes, batched with rows that have nothing
to compress."""

from __future__ import annotations

import pytest

pytest.importorskip("lm_eval")

from tests.harness.fixtures import make_folders  # noqa: E402

TASKS = ["tiny_cloze", "tiny_rolling"]
# Full at ratio 1 reads a rolling document whole by itself (hf scores it in one window, and
# the documents here hold 79-99 tokens: more than a window of 2 x recent_tokens = 80); Nugget2D's
# autoregressive stream needs its window: ratio 1 keeps every token of compressed_tokens, so
# recent + 500 tokens cover every document here
ROLLING = {"full": "", "nugget2d": ",compressed_tokens=500"}


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    return make_folders(tmp_path_factory.mktemp("harness"))


def responses(folders, model: str, model_args: str) -> dict[str, list]:
    """Per task, each document's raw responses (``(logprob, is_greedy)`` per choice; the
    rolling log-likelihood)."""
    import lm_eval
    from lm_eval.tasks import TaskManager

    import stages.nugget2d.harness.lm  # noqa: F401  (registers nugget2d)

    result = lm_eval.simple_evaluate(
        model=model, model_args=model_args, tasks=TASKS, log_samples=True, device="cpu", batch_size=2,
        task_manager=TaskManager(include_path=str(folders.tasks), include_defaults=False))
    assert result is not None
    return {t: [s["resps"] for s in sorted(result["samples"][t], key=lambda s: s["doc_id"])] for t in TASKS}


@pytest.fixture(scope="module")
def hf(folders):
    return responses(folders, "hf", f"pretrained={folders.hf},dtype=float32")


@pytest.mark.parametrize("system,context", [("full", "whole"), ("full", "recent"),
                                            ("nugget2d", "whole"), ("nugget2d", "recent")])
def test_every_token_kept_equals_the_hf_model(folders, hf, system, context):
    checkpoint = (f"checkpoint={folders.hf}" if system == "full"
                  else f"checkpoint={folders.nugget2d},base_model={folders.hf},threshold=-1e9")
    # recent_tokens=40: the cloze contexts (31-116 tokens) are compressed in part, the shortest not at all
    ours = responses(folders, "nugget2d",
                     f"{checkpoint},system={system},ratio=1,context={context},recent_tokens=40{ROLLING[system]}")
    cloze_hf, cloze = hf["tiny_cloze"], ours["tiny_cloze"]
    assert len(cloze) == len(cloze_hf) == 6
    for doc_hf, doc in zip(cloze_hf, cloze, strict=True):
        assert len(doc) == len(doc_hf) == 4
        for (choice_hf,), (choice,) in zip(doc_hf, doc, strict=True):
            assert choice[0] == pytest.approx(choice_hf[0], abs=1e-4)
            assert choice[1] == choice_hf[1]
    rolling_hf, rolling = hf["tiny_rolling"], ours["tiny_rolling"]
    assert len(rolling) == len(rolling_hf) == 6
    for (value_hf,), (value,) in zip(rolling_hf, rolling, strict=True):
        # a sum of ~100 token log-probabilities, each read token by token instead of in one pass
        assert value == pytest.approx(value_hf, rel=1e-6, abs=1e-3)


def test_full_at_ratio_1_past_max_length_equals_the_hf_model(folders):
    """Past the LM's max_length lm_eval's hf model scores a rolling document in windows; Full at
    r = 1 (eval_harness's full_whole row) scores the same windows, hence the same numbers."""
    from lm_eval.utils import get_rolling_token_windows, make_disjoint_window

    from stages.nugget2d.harness.settings import rolling_windows

    for n in (1, 2, 5, 16, 17, 31, 32, 33, 50, 97):
        for length in (1, 4, 16):
            ids = [0, *range(100, 100 + n)]  # the prefix token, then the document
            ours = [(ids[start : end - 1], ids[first:end]) for start, first, end in rolling_windows(len(ids), length)]
            theirs = []
            for context, continuation in map(make_disjoint_window, get_rolling_token_windows(ids[1:], 0, length, 1)):
                whole = (context + continuation)[-(length + 1):]  # HFLM._loglikelihood_tokens' input
                theirs.append((whole[:-1], continuation))
            assert ours == theirs, (n, length)
    hf = responses(folders, "hf", f"pretrained={folders.hf},dtype=float32,max_length=24")
    ours = responses(folders, "nugget2d", f"checkpoint={folders.hf},system=full,ratio=1,max_length=24")
    for (value_hf,), (value,) in zip(hf["tiny_rolling"], ours["tiny_rolling"], strict=True):
        assert value == pytest.approx(value_hf, rel=1e-6, abs=1e-3)


def test_a_compressed_context_changes_the_answers(folders, hf):
    """The comparison can fail: Full keeping a tenth of the compressed part reads less."""
    ours = responses(folders, "nugget2d", f"checkpoint={folders.hf},system=full,ratio=0.1,recent_tokens=4")
    differ = [abs(c[0][0] - h[0][0]) > 1e-3 for d, dh in zip(ours["tiny_cloze"], hf["tiny_cloze"], strict=True)
              for c, h in zip(d, dh, strict=True)]
    assert any(differ)


def test_from_model_answers_as_lm_eval_s_hf_model_including_generation(folders):
    """The classmethod a stage uses on a loaded model, called request type by request type
    against lm_eval's HFLM on the same Instances: log-likelihoods and greedy generations."""
    from lm_eval.api.instance import Instance
    from lm_eval.models.huggingface import HFLM

    from stages.nugget2d.harness.lm import Nugget2DHarnessLM
    from stages.nugget2d.loading import load_model_folder
    from tests.harness.fixtures import CHOICES, contexts

    hf = HFLM(pretrained=str(folders.hf), device="cpu", dtype="float32", batch_size=1)
    model, tokenizer, trained = load_model_folder(folders.hf, None, "cpu")
    assert not trained
    ours = Nugget2DHarnessLM.from_model(model, tokenizer, system="full", ratio=1.0, context="whole", batch_size=3)
    assert ours.settings.max_length == hf.max_length  # full_whole's rolling window, resolved as hf resolves it
    pairs = [(c, choice) for c in contexts()[:3] for choice in CHOICES[:2]] + [("", CHOICES[0])]
    ll = [Instance("loglikelihood", {}, pair, i) for i, pair in enumerate(pairs)]
    for ours_answer, hf_answer in zip(ours.loglikelihood(ll), hf.loglikelihood(ll), strict=True):
        assert ours_answer[0] == pytest.approx(hf_answer[0], abs=1e-4) and ours_answer[1] == hf_answer[1]
    gen = [Instance("generate_until", {}, (c, {"until": ["."], "max_gen_toks": 8, "do_sample": False}), i)
           for i, c in enumerate(contexts()[:3])]
    texts = ours.generate_until(gen)
    assert texts == hf.generate_until(gen) and any(texts)


def test_a_stage_s_harness_model_prints_no_progress_bar(folders, capfd):
    """``progress=False`` (eval_harness in a quiet run): lm_eval's "Tokenizing inputs" bar,
    which its loglikelihood opens with disable=False, stays out of the log."""
    from lm_eval.api.instance import Instance

    from stages.nugget2d.harness.lm import Nugget2DHarnessLM
    from stages.nugget2d.loading import load_model_folder
    from tests.harness.fixtures import CHOICES, contexts

    model, tokenizer, _ = load_model_folder(folders.hf, None, "cpu")
    requests = [Instance("loglikelihood", {}, (contexts()[0], CHOICES[0]), 0)]
    capfd.readouterr()
    Nugget2DHarnessLM.from_model(model, tokenizer, system="full", ratio=1.0, progress=False).loglikelihood(requests)
    assert "Tokenizing inputs" not in capfd.readouterr().err
    Nugget2DHarnessLM.from_model(model, tokenizer, system="full", ratio=1.0).loglikelihood(requests)
    assert "Tokenizing inputs" in capfd.readouterr().err  # what the switch removes
