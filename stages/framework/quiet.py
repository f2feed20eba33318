"""Quiet by default: what third-party libraries print in stage tasks and Ray Train workers.

Left alone, the libraries fill a ``make run`` log with progress bars (Ray Data, HF
weights loading and saving, GGUF conversion), Ray Train's per-report INFO lines and the
Tune table, and the pipeline's own lines (stage start / finish, training progress) drown
in them.
:func:`apply` turns those off in the current process, and :func:`apply` with
``verbose=True`` (``--verbose`` on the command line, carried to every Ray process by
``NUGGET_VERBOSE=1`` in the runtime env, :func:`runtime_env_vars`) puts every one back.

What it sets, and why each is needed:

- environment variables read by the libraries at import or at use (a stage task imports
  them after :func:`apply`): Ray Data's progress bars and its log level, HF hub /
  datasets progress bars, transformers' verbosity, and ``TQDM_DISABLE`` (the GGUF
  conversion bar is a plain ``tqdm.auto`` bar, which only tqdm's own switch reaches);
- the same switches on modules already imported (Ray reuses worker processes, so a
  stage may find ray.data or transformers loaded by an earlier task);
- log levels of Ray Train's own loggers (``Reporting training result``,
  ``Checkpoint successfully created``, the ``TrainController`` lines) for the processes
  Ray Train configures itself: :func:`train_log_level` goes into its ``LoggingConfig``
  (`stages.training.launch`); Ray Tune prints its trial table with ``print``, which only its
  ``RunConfig(verbose=...)`` controls: :func:`tune_verbosity`, for the ``Tuner``'s config;
- warnings known to be harmless, filtered by their exact message (never all warnings);
- the driver's own scheduler chatter (``waits: ...``, the critical path): logged at
  :func:`chatter_level`, DEBUG unless verbose, so the log keeps one line per stage start
  and finish;
- colour: :func:`use_color` (a terminal, and no ``NO_COLOR``); where it is off,
  :func:`plain_ray_output` turns off the colour codes Ray's driver puts around every worker
  line (``RAY_COLOR_PREFIX=0``) and strips those of its own log records (the dashboard link).

Not reachable from here: the raylet's "N PYTHON worker processes have been started ...
the maximum expected startup concurrency" warning is pushed by the C++ raylet to every
driver and has no switch (its threshold, ``RAY_worker_maximum_startup_concurrency``,
also throttles worker start-up, so it is left alone); ``make run`` filters the line out
of the terminal's copy of the log (the Makefile's ``RAY_CLI_CHATTER``).

Errors are never hidden: only INFO-level chatter, progress bars and the listed warnings.
"""

from __future__ import annotations

import logging
import os
import re
import sys
import warnings
from dataclasses import dataclass
from typing import TextIO

VERBOSE_ENV = "NUGGET_VERBOSE"

# library switches read from the environment (value when quiet)
QUIET_ENV: dict[str, str] = {
    "RAY_DATA_DISABLE_PROGRESS_BARS": "1",
    "RAY_DATA_LOG_LEVEL": "WARNING",  # "Starting execution of Dataset ...", execution plans
    "HF_HUB_DISABLE_PROGRESS_BARS": "1",  # also transformers' own bars (Loading weights, Writing model shards)
    "HF_DATASETS_DISABLE_PROGRESS_BARS": "1",
    "TRANSFORMERS_VERBOSITY": "error",
    "TRANSFORMERS_NO_ADVISORY_WARNINGS": "1",
    "TQDM_DISABLE": "1",  # GGUF "Converting and de-quantizing GGUF tensors" (plain tqdm)
    # with an http tracking URI MLflow prints "View run ... / View experiment ..." per run
    "MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT": "true",
    # Ray Tune's new output engine prints its "Configuration for experiment" box and a
    # TensorBoard hint into Ray's temporary folder whatever RunConfig(verbose=...) says; the
    # classic engine prints nothing at verbose=0 (tune_verbosity)
    "RAY_AIR_NEW_OUTPUT": "0",
}

# loggers whose INFO lines are per-step / per-report chatter (level when quiet)
QUIET_LOGGERS: dict[str, int] = {
    "ray.data": logging.WARNING,
    "ray.train": logging.WARNING,  # Reporting training result N, Checkpoint successfully created
    "ray.tune": logging.WARNING,
    "transformers": logging.ERROR,
    "datasets": logging.ERROR,
    "absl": logging.WARNING,  # rouge_score: "Using default tokenizer." per scoring call
    "bm25s": logging.WARNING,  # per-call DEBUG / INFO lines of the BM25 index
    "lm_eval": logging.WARNING,  # eval_harness: lm-evaluation-harness's per-task building / request INFO lines
}
# modules whose logger is named by their file path (``getLogger(__file__)``), so no
# ``ray.train`` level or LoggingConfig reaches it: Ray Train's "Reporting training result
# N: TrainingReport(...)" on every report of every worker
QUIET_FILE_LOGGERS: dict[str, int] = {
    "ray.train.v2._internal.execution.context": logging.WARNING,
}


@dataclass(frozen=True)
class KnownWarning:
    """A harmless warning, matched by the start of its exact message."""

    category: type[Warning]
    message: str  # the message's beginning, as the library writes it
    why: str


KNOWN_WARNINGS: tuple[KnownWarning, ...] = (
    KnownWarning(FutureWarning, "`is_gradient_checkpointing` is deprecated and will be removed in v6",
                 "transformers 5 calls its own deprecated alias when peft enables checkpointing"),
)

# harmless log records of other libraries, matched by the start of their message
KNOWN_LOG_LINES: dict[str, tuple[str, ...]] = {
    # DeepSpeed on a CPU-only machine: expected, the engine sets DS_ACCELERATOR=cpu itself
    "DeepSpeed": ("Setting accelerator to CPU.",),
    # Ray Data's WARNING that the bars are off, which quiet turned off on purpose
    "ray.data._internal.progress": ("Progress bars disabled.",),
}


class _DropKnown(logging.Filter):
    """Drops records whose message starts with one of ``prefixes``."""

    def __init__(self, prefixes: tuple[str, ...]) -> None:
        super().__init__()
        self.prefixes = prefixes

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith(self.prefixes)


# what apply(verbose=False) changed, so that apply(verbose=True) restores it
_saved_env: dict[str, str | None] = {}
_saved_levels: dict[str, int] = {}
_installed_filters: list[tuple[logging.Logger, logging.Filter]] = []


def is_verbose() -> bool:
    """Whether this process runs with ``--verbose`` (``NUGGET_VERBOSE=1``)."""
    return os.environ.get(VERBOSE_ENV, "") not in ("", "0")


def runtime_env_vars(verbose: bool) -> dict[str, str]:
    """Environment for every Ray process of the job: the verbose switch, and the quiet
    switches themselves (they must be set before a library is imported there)."""
    return {VERBOSE_ENV: "1"} if verbose else {VERBOSE_ENV: "0", **QUIET_ENV}


def train_log_level() -> str:
    """Ray Train's ``LoggingConfig(log_level=...)``: it configures its controller and
    worker loggers itself, after :func:`apply` ran in those processes."""
    return "INFO" if is_verbose() else "WARNING"


def tune_verbosity() -> int:
    """Ray Tune's ``RunConfig(verbose=...)``: 0 drops the console table of trials."""
    return 1 if is_verbose() else 0


def chatter_level() -> int:
    """The level of the driver's scheduler lines: INFO with ``--verbose``, else DEBUG."""
    return logging.INFO if is_verbose() else logging.DEBUG


def use_color(stream: TextIO) -> bool:
    """Colour codes only for a terminal, and never under ``NO_COLOR`` (no-color.org)."""
    return not os.environ.get("NO_COLOR") and bool(getattr(stream, "isatty", lambda: False)())


ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


class _StripAnsi(logging.Filter):
    """Removes colour codes from a record's message (Ray colours its dashboard link)."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if "\x1b[" in message:
            record.msg, record.args = ANSI.sub("", message), None
        return True


def plain_ray_output(stream: TextIO) -> None:
    """Before ``ray.init`` in the driver: no colour codes in what Ray prints when ``stream``
    (the driver's stdout) should not have them (:func:`use_color`). Ray's driver wraps each
    worker line's ``(stage:x pid=N)`` prefix in colour unless ``RAY_COLOR_PREFIX=0``."""
    if use_color(stream):
        return
    os.environ["RAY_COLOR_PREFIX"] = "0"
    import ray  # noqa: F401  (configures the "ray" logger's handlers)

    for handler in [*logging.getLogger("ray").handlers, *logging.getLogger().handlers]:
        if not any(isinstance(f, _StripAnsi) for f in handler.filters):
            handler.addFilter(_StripAnsi())


def _set_env(quiet: bool) -> None:
    for name, value in QUIET_ENV.items():
        if quiet:
            _saved_env.setdefault(name, os.environ.get(name))
            os.environ[name] = value
        elif name in _saved_env:
            old = _saved_env.pop(name)
            if old is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = old


def _logger_levels() -> dict[str, int]:
    """Logger name -> quiet level: :data:`QUIET_LOGGERS`, plus the file-named loggers of
    the :data:`QUIET_FILE_LOGGERS` modules this process has imported."""
    found = {getattr(sys.modules[m], "__file__", None): level for m, level in QUIET_FILE_LOGGERS.items()
             if m in sys.modules}
    return {**QUIET_LOGGERS, **{name: level for name, level in found.items() if name}}


def _set_loggers(quiet: bool) -> None:
    if not quiet:  # every level changed earlier (file loggers included) and every filter
        for name in list(_saved_levels):
            logging.getLogger(name).setLevel(_saved_levels.pop(name))
        for log, dropper in _installed_filters:
            log.removeFilter(dropper)
        _installed_filters.clear()
        return
    for name, level in _logger_levels().items():
        log = logging.getLogger(name)
        _saved_levels.setdefault(name, log.level)
        log.setLevel(level)
    if not _installed_filters:
        for name, prefixes in KNOWN_LOG_LINES.items():
            log, dropper = logging.getLogger(name), _DropKnown(prefixes)
            log.addFilter(dropper)
            _installed_filters.append((log, dropper))


def _set_warnings(quiet: bool) -> None:
    for known in KNOWN_WARNINGS:
        pattern = re.escape(known.message)
        # drop our own entry first: applying twice must not stack filters
        # typeshed declares `filters` a Sequence; it is the module's list, which
        # filterwarnings and resetwarnings mutate in place as well
        warnings.filters[:] = [f for f in warnings.filters  # type: ignore[index]
                               if not (f[0] == "ignore" and f[2] is known.category
                                       and getattr(f[1], "pattern", None) == pattern)]
        if quiet:
            warnings.filterwarnings("ignore", message=pattern, category=known.category)
    # the warnings module caches per-module decisions: tell it the filters changed
    mutated = getattr(warnings, "_filters_mutated", None)
    if mutated is not None:
        mutated()


def _set_loaded_libraries(quiet: bool) -> None:
    """The same switches on libraries this (reused) process has already imported."""
    if "ray.data" in sys.modules:
        from ray.data import DataContext

        ctx = DataContext.get_current()
        ctx.enable_progress_bars = not quiet
        ctx.print_on_execution_start = not quiet
    if "huggingface_hub" in sys.modules:
        from huggingface_hub.utils import disable_progress_bars, enable_progress_bars

        (disable_progress_bars if quiet else enable_progress_bars)()
    if "transformers" in sys.modules:
        from transformers.utils import logging as hf_logging

        (hf_logging.disable_progress_bar if quiet else hf_logging.enable_progress_bar)()
        hf_logging.set_verbosity(logging.ERROR if quiet else logging.WARNING)
    if "datasets" in sys.modules:
        import datasets

        (datasets.disable_progress_bars if quiet else datasets.enable_progress_bars)()


def apply(verbose: bool | None = None) -> None:
    """Quiet this process (``verbose=False``) or undo it (``True``); None: from
    ``NUGGET_VERBOSE``. Idempotent; call it before a stage or a training worker starts."""
    quiet = not (is_verbose() if verbose is None else verbose)
    _set_env(quiet)
    _set_loggers(quiet)
    _set_warnings(quiet)
    _set_loaded_libraries(quiet)
