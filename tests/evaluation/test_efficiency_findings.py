"""The report's efficiency tables, figure and findings on eval_efficiency tables written by hand:
the speed finding reads the shortest context >= 4,096 and pairs the repeats; the KV-share
finding holds at every context or fails; a run without a long context cannot measure it."""

from __future__ import annotations

from pathlib import Path

from stages.common.bandwidth import Bandwidth
from stages.nugget2d.lm.efficiency import DecodeCost, DecodeSystem
from stages.nugget2d.lm.efficiency_table import efficiency_table
from stages.report.efficiency_tables import EFFICIENCY_TABLE, KV_SHARE, MS, efficiency_tables
from stages.report.figures import decode_cost_by_context
from stages.report.findings import (
    EFFICIENCY_FINDINGS,
    NOT_MEASURABLE,
    NOT_SHOWN,
    SHOWN,
    TOO_FEW,
    judge,
)
from tests.evaluation.fixtures import stored_table

BANDWIDTH = Bandwidth(10.0, (10.0,), 2**20, "cpu")
PER_POSITION = 1000


def _cost(name: str, ratio: float | None, n: int, ms: list[float], kept: int | None = None) -> DecodeCost:
    kept = n if kept is None else kept
    return DecodeCost(DecodeSystem(name, ratio), n, 8, kept, ms, [100.0], kept * PER_POSITION,
                      (kept + 8 + 3) * PER_POSITION, 10**8)


def _verdicts(tmp_path: Path, costs: list[DecodeCost]) -> dict[str, str]:
    tmp_path.mkdir(parents=True, exist_ok=True)
    efficiency_table(costs, [], BANDWIDTH, "test", 1, 2).write(tmp_path)
    tables = efficiency_tables(stored_table("eval_efficiency", tmp_path), "test")
    return {v.finding: v.verdict for v in judge(tables, EFFICIENCY_FINDINGS)}


def _noisy(mean: float, repeats: int = 20) -> list[float]:
    return [mean + (0.3 if i % 2 else -0.3) for i in range(repeats)]


def test_faster_at_the_shortest_long_context_and_kv_share_shown(tmp_path):
    costs = []
    for n in (1024, 4096, 8000):
        costs += [_cost("full", None, n, _noisy(50 + n / 100)), _cost("nugget2d", 0.1, n, _noisy(45), -(-n // 10)),
                  _cost("nugget2d", 0.05, n, _noisy(44), -(-n // 20))]
    verdicts = _verdicts(tmp_path, costs)
    assert verdicts == {"nugget2d_decodes_faster": SHOWN, "nugget2d_kv_is_r_0.1": SHOWN,
                        "nugget2d_kv_is_r_0.05": SHOWN}
    tables = efficiency_tables(stored_table("eval_efficiency", tmp_path), "test")
    decode = next(t for t in tables if t.id == EFFICIENCY_TABLE)
    long = decode.values("full@long", MS)
    assert [v.label for v in long] == ["full:4096"]  # the shortest context >= 4,096, not 8,000
    assert len(decode.values("nugget2d_0.1@any", KV_SHARE)) == 3
    assert not decode.problems()


def test_slower_where_it_matters_is_not_shown_and_a_wrong_share_fails(tmp_path):
    costs = [_cost("full", None, 4096, _noisy(50)), _cost("nugget2d", 0.1, 4096, _noisy(50.1), 410),
             _cost("nugget2d", 0.05, 4096, _noisy(49), 600)]  # 600 / 4096 = 0.146: not ~0.05
    verdicts = _verdicts(tmp_path, costs)
    assert verdicts["nugget2d_decodes_faster"] == NOT_SHOWN
    assert verdicts["nugget2d_kv_is_r_0.1"] == SHOWN and verdicts["nugget2d_kv_is_r_0.05"] == NOT_SHOWN


def test_short_contexts_or_few_repeats_cannot_tell(tmp_path):
    short = [_cost("full", None, 256, _noisy(50, 5)), _cost("nugget2d", 0.1, 256, _noisy(40, 5), 26)]
    assert _verdicts(tmp_path / "a", short)["nugget2d_decodes_faster"] == NOT_MEASURABLE
    few = [_cost("full", None, 4096, _noisy(50, 5)), _cost("nugget2d", 0.1, 4096, _noisy(40, 5), 410)]
    assert _verdicts(tmp_path / "b", few)["nugget2d_decodes_faster"] == TOO_FEW


def test_figure_draws_every_system_with_its_interval(tmp_path):
    costs = [_cost("full", None, n, _noisy(50 + n / 100)) for n in (1024, 4096)]
    costs += [_cost("nugget2d", 0.1, n, _noisy(45), n // 10) for n in (1024, 4096)]
    table = efficiency_table(costs, [], BANDWIDTH, "test", 1, 2)
    figure = decode_cost_by_context(table, "eval_efficiency", tmp_path / "decode.png")
    assert figure.path.is_file() and "95% bootstrap interval over repeats" in figure.caption
