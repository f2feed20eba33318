"""What every training output records about whether its models learned, in one shape.

Each fit of the shared training loop (`stages.training.loop`) ends with a trainer state
(``trainer_state.json`` beside the model it trained): among its fields the dev loss
before any update (``initial_dev_loss``, step 0), the dev loss of the weights the fit
exported (``exported_dev_loss``: the last step's, or with ``export_model=best_dev`` the
best evaluation's), the steps taken (``step``), the dev target tokens each dev loss
averages over (``dev_loss_n``) and the tokens its steps processed (``tokens_seen``,
inputs + targets, every rank). A sweep trial records the same fields in its result
record (``steps`` for ``step``); both record whether the exported weights read their
compressed input (``input_use``: own, other, low, high, n; ``input_use_note``: why not
measured; `stages.training.input_use`). The training contracts (`stages.nugget.artifacts.models`,
`stages.nugget2d.artifacts`,
`stages.restorable.artifacts`) read them into a `TrainingSummary` per trained model;
the report's training section shows them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from stages.artifacts.base import Location, field
from stages.common.progress import dev_loss_rose

TRAINER_STATE = "trainer_state.json"  # the loop's trainer state, beside each trained model
# a model uses its compressed input when another example's input raises its dev loss by more than this
# (nats per target token, the lower end of the paired 95% interval): 0.01 nats is a 1% rise in perplexity
INPUT_USE_MARGIN = 0.01


@dataclass(frozen=True)
class InputUse:
    """Whether a model reads its compressed input (nuggets, a memory, an embedding): its dev loss
    with each example's own input (``own``) and with another dev example's (``other``), nats per
    target token over the same targets, and the paired 95% bootstrap interval of ``other - own``
    over the ``n`` dev examples (`stages.common.resampling`). A model whose loss does not rise when
    it reads another example's input ignores its input: nothing it outputs depends on it."""

    own: float
    other: float
    low: float
    high: float
    n: int

    @property
    def ignores(self) -> bool:
        """The rise's interval does not clear `INPUT_USE_MARGIN`."""
        return self.low <= INPUT_USE_MARGIN

    def reason(self) -> str:
        """Why the model is below every floor ("" where it reads its input): it ignores its input (the
        rise's whole interval is at most the margin), or it is not shown to read it (the interval
        straddles the margin: too few dev examples to tell). Either way no finding stands on it."""
        if not self.ignores:
            return ""
        what = "ignores its input" if self.high <= INPUT_USE_MARGIN else "not shown to read its input"
        return (f"{what}: dev loss {self.own:.3f} with its own example's input, {self.other:.3f} with "
                f"another's (rise {self.other - self.own:+.3f} [{self.low:+.3f}, {self.high:+.3f}] nats per token, "
                f"paired over {self.n} dev examples; reading it needs the interval above {INPUT_USE_MARGIN:g})")


@dataclass(frozen=True)
class TrainingSummary:
    """One trained model's learning, from its trainer state."""

    model: str  # "<stage>", or "<stage>/<name>" for one of several models of a stage
    steps: int
    dev_loss_before: float  # at step 0, before any update
    dev_loss_after: float  # of the weights the fit exported
    dev_loss_n: int  # dev target tokens each dev loss averages over
    tokens_seen: int  # inputs + targets of every step, all ranks
    # the dev loss at each evaluation after step 0 (the trainer state's ``dev_losses``; empty where the
    # record has none, e.g. a sweep trial's): the report's training curves
    dev_losses: tuple[float, ...] = ()
    # the exported weights' use of their compressed input (the trainer state's ``input_use``: own, other, low,
    # high, n); None where the task has no compressed input or the dev split too few examples to tell
    input_use: InputUse | None = None
    input_use_note: str = ""  # why input_use is None (the trainer state's ``input_use_note``; "" in older records)

    @property
    def got_worse(self) -> bool:
        """Training left the dev loss above its untrained start (a non-finite end counts)."""
        return dev_loss_rose(self.dev_loss_before, self.dev_loss_after)


def summary_of(where: Location, name: str, record: Any, model: str, steps_key: str = "step") -> TrainingSummary:
    """The `TrainingSummary` of ``record`` (a trainer state, or a record with its fields;
    ``steps_key`` names its step count) in file ``name`` of ``where``; a
    `ContractError` naming the file and field when one is missing."""
    return TrainingSummary(
        model=model,
        steps=field(where, name, record, steps_key, int),
        dev_loss_before=field(where, name, record, "initial_dev_loss", float),
        dev_loss_after=field(where, name, record, "exported_dev_loss", float),
        dev_loss_n=field(where, name, record, "dev_loss_n", int),
        tokens_seen=field(where, name, record, "tokens_seen", int),
        dev_losses=tuple(float(x) for x in field(where, name, record, "dev_losses", list, default=[])),
        input_use=input_use_of(where, name, record),
        input_use_note=field(where, name, record, "input_use_note", str, default=""),
    )


def input_use_of(where: Location, name: str, record: Any) -> InputUse | None:
    """The `InputUse` of ``record``'s ``input_use`` (absent or null: None, as in records written
    before the training loop measured it); a `ContractError` naming the field when malformed."""
    raw = field(where, name, record, "input_use", (dict, type(None)), default=None)
    if raw is None:
        return None
    flat = {f"input_use.{k}": v for k, v in raw.items()}  # errors name the nested field
    values = {key: field(where, name, flat, f"input_use.{key}", float) for key in ("own", "other", "low", "high")}
    return InputUse(**values, n=field(where, name, flat, "input_use.n", int))


def read_summary(where: Location, name: str, model: str) -> TrainingSummary:
    """The `TrainingSummary` of the trainer state file ``name`` (relative to ``where``)."""
    return summary_of(where, name, where.json(name), model)
