"""The report's own figures and names: training curves per stage, readable headline metric names."""

from __future__ import annotations

from stages.artifacts.trainer_state import TrainingSummary
from stages.report.figures import training_curves
from stages.report.results_json import headline_name


def _summary(model: str, dev_losses: tuple[float, ...]) -> TrainingSummary:
    return TrainingSummary(model, 10, 5.0, dev_losses[-1] if dev_losses else 4.0, 64, 1000, dev_losses)


def test_training_curves_draw_every_model_with_evaluations_and_name_the_others(tmp_path):
    path = tmp_path / "curves.png"
    figure = training_curves([_summary("train_re/a", (4.0, 3.0)), _summary("train_re/b", (4.5,)),
                              _summary("train_nugget", (3.5,)), _summary("sweep_nugget/t1", ())], path)
    assert path.stat().st_size > 1000
    assert figure.caption.startswith("3 trained models of 2 training stages")
    assert figure.caption.endswith("Without recorded evaluations (not drawn): sweep_nugget/t1.")


def test_headline_names_read_as_their_cells():
    assert headline_name("nugget_table2", "nugget_mt_0.1", "pi") == "nugget.table2.nugget_mt_0.1.pi"
    assert headline_name("nugget_fig4", "ae_r>=0.1", "bleu") == "nugget.fig4.ae_r_ge_0.1.bleu"
    assert headline_name("re_table9", "grad|1|0", "r@1") == "re.table9.grad.1.0.r_1"
    assert headline_name("nugget2d_table1", "nugget2d_64", "wikitext_subword") == \
        "nugget2d.table1.nugget2d_64.wikitext_subword"
