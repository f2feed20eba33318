"""``nugget2d``: Nugget2D, Full, nodoc and the training-free KV presses as an
lm-evaluation-harness model (docs/harness.md)::

    nugget lm-eval --model nugget2d --model_args checkpoint=<folder>,system=nugget2d,ratio=0.1 --tasks ...

Importing this module registers the model with lm_eval's registry (lm_eval 0.4 finds no
model outside its own package by itself, hence ``nugget lm-eval``, which imports it first).
Requests are tokenized exactly as lm_eval's ``hf`` model does (`TemplateLM._encode_pair`, its
prefix token, `tok_encode`), so with every token kept (``ratio=1``) the log-likelihoods equal
``--model hf``'s. What each request type does with the context: `settings` and `scoring`.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from lm_eval.api.model import TemplateLM
from lm_eval.api.registry import register_model
from lm_eval.models.utils import handle_stop_sequences, postprocess_generated_text

from nugget_core.nugget2d.presses import PressConfig
from stages.common.progress import LoopProgress, progress_logger
from stages.nugget2d.harness import scoring
from stages.nugget2d.harness.settings import (
    BASE_LM_SYSTEMS,
    RECENT_TOKENS,
    HarnessSettings,
    model_max_length,
)
from stages.nugget2d.lm.prompted import eos_and_pad

LOG = logging.getLogger("nugget.harness")


@register_model("nugget2d")
class Nugget2DHarnessLM(TemplateLM):
    """An lm_eval LM over a `Nugget2DModel` (module docstring; arguments: docs/harness.md)."""

    progress: bool = True  # lm_eval's progress bars and the settings line at INFO (`from_model`)

    def __init__(
        self,
        checkpoint: str,
        system: str = "nugget2d",
        ratio: float | None = None,
        context: str = "recent",
        recent_tokens: int = RECENT_TOKENS,
        threshold: float | None = None,
        base_model: str | None = None,
        base_within: str | None = None,
        device: str = "cpu",
        dtype: str = "float32",
        batch_size: int | str = 1,
        max_gen_toks: int = 256,
        soft_prompt: bool | None = None,
        compressed_tokens: int | None = None,
        sink_tokens: int = PressConfig.sink_tokens,
        snapkv_window: int = PressConfig.window,
        snapkv_kernel: int = PressConfig.kernel,
        max_batch_size: int | None = None,
        max_length: int | None = None,
    ) -> None:
        from stages.nugget2d.loading import load_model_folder

        super().__init__()
        if max_batch_size is not None:
            raise ValueError("max_batch_size: only meaningful with batch_size=auto, which nugget2d does not support")
        batch = _batch_size(batch_size)
        press = PressConfig(sink_tokens=sink_tokens, window=snapkv_window, kernel=snapkv_kernel)
        # every argument checked before the model loads (the ratio again once it is known)
        HarnessSettings(system=system, ratio=1.0 if ratio is None else ratio, context=context,
                        recent_tokens=recent_tokens, threshold=threshold, compressed_tokens=compressed_tokens,
                        batch_size=batch, max_gen_toks=max_gen_toks, press=press, max_length=max_length)
        model, tokenizer, trained = load_model_folder(Path(checkpoint), base_model, device, base_within, dtype)
        if not trained and system not in BASE_LM_SYSTEMS:
            raise ValueError(f"system {system!r} needs a Nugget2D model folder; {checkpoint} is a plain HF "
                             f"folder, which serves {BASE_LM_SYSTEMS} only")
        if ratio is None and not trained:
            raise ValueError(f"ratio: {checkpoint} is a plain HF folder, which records no ratio; pass ratio=")
        self._bind(model, tokenizer, system=system, ratio=ratio, context=context, recent_tokens=recent_tokens,
                   threshold=threshold, batch_size=batch, max_gen_toks=max_gen_toks, soft_prompt=soft_prompt,
                   compressed_tokens=compressed_tokens, press=press, max_length=max_length)

    @classmethod
    def from_model(
        cls, model: Any, tokenizer: Any, *, system: str = "nugget2d", ratio: float | None = None,
        context: str = "recent", recent_tokens: int = RECENT_TOKENS, threshold: float | None = None,
        batch_size: int = 1, max_gen_toks: int = 256, soft_prompt: bool | None = None,
        compressed_tokens: int | None = None, press: PressConfig | None = None, progress: bool = True,
        max_length: int | None = None,
    ) -> Nugget2DHarnessLM:
        """The harness model over an already loaded `Nugget2DModel` (in eval mode, on its
        device) and its tokenizer; ``ratio`` / ``threshold`` / ``soft_prompt`` None: the
        model's configured ratio, calibrated Lambda and recorded usage; ``max_length`` None:
        the base LM's context length as lm_eval's ``hf`` model resolves it. ``progress=False``:
        no progress bars of lm_eval's and its settings line at DEBUG (a pipeline stage's quiet log)."""
        lm = cls.__new__(cls)
        TemplateLM.__init__(lm)
        lm.progress = progress
        lm._bind(model, tokenizer, system=system, ratio=ratio, context=context, recent_tokens=recent_tokens,
                 threshold=threshold, batch_size=batch_size, max_gen_toks=max_gen_toks, soft_prompt=soft_prompt,
                 compressed_tokens=compressed_tokens, press=press or PressConfig(), max_length=max_length)
        return lm

    def _bind(self, model: Any, tokenizer: Any, *, ratio: float | None, threshold: float | None,
              soft_prompt: bool | None, max_length: int | None, **settings: Any) -> None:
        self.model = model
        self.tokenizer = tokenizer
        usage = getattr(model, "usage", None)
        self.settings = HarnessSettings(
            ratio=model.config.ratio if ratio is None else ratio,
            threshold=model.config.threshold if threshold is None else threshold,
            soft_prompt=bool(usage.soft_prompt) if soft_prompt is None and usage is not None else bool(soft_prompt),
            max_length=max_length or model_max_length(model.lm.config, tokenizer), **settings)
        self._pad_id = eos_and_pad(tokenizer)[1]
        LOG.log(logging.INFO if self.progress else logging.DEBUG, "nugget2d harness model: %s", self.settings)

    # --- tokenization, as lm_eval's HFLM ----------------------------------------------------

    @property
    def eot_token_id(self) -> int:
        return int(self.tokenizer.eos_token_id)

    @property
    def prefix_token_id(self) -> int:
        """HFLM's: the BOS token, else EOS (what an empty context and a rolling document
        start from)."""
        bos = self.tokenizer.bos_token_id
        return int(bos if bos is not None else self.tokenizer.eos_token_id)

    @property
    def max_gen_toks(self) -> int:
        return self.settings.max_gen_toks

    @property
    def device(self) -> Any:
        return self.model.device

    @property
    def tokenizer_name(self) -> str:
        return str(self.tokenizer.name_or_path).replace("/", "__")

    def tok_encode(self, string: str, add_special_tokens: bool | None = None, **kwargs: Any) -> list[int]:
        """HFLM's rule: the tokenizer's default special tokens, none when the string already
        starts with the prefix token's text."""
        if add_special_tokens is None and string.startswith(self.tokenizer.decode(self.prefix_token_id)):
            add_special_tokens = False
        options = {} if add_special_tokens is None else {"add_special_tokens": add_special_tokens}
        return list(self.tokenizer.encode(string, **options))

    # --- the three request types ----------------------------------------------------------

    def loglikelihood(self, requests: list[Any], disable_tqdm: bool = False) -> list[tuple[float, bool]]:
        """lm_eval's (tokenizes, then `_loglikelihood_tokens`), its "Tokenizing inputs" bar
        shown only with ``progress``: lm_eval passes ``disable=False`` itself, which
        ``TQDM_DISABLE`` cannot override."""
        return super().loglikelihood(requests, disable_tqdm=disable_tqdm or not self.progress)

    def _loglikelihood_tokens(self, requests: list[tuple[tuple[str, str], list[int], list[int]]],
                              disable_tqdm: bool = False, **kwargs: Any) -> list[tuple[float, bool]]:
        scores = scoring.score_continuations(
            self.model, self.settings, [(ctx, cont) for _, ctx, cont in requests], self._pad_id)
        out = []
        for (request, _, _), score in zip(requests, scores, strict=True):
            answer = (score.logprob, score.greedy)
            self.cache_hook.add_partial("loglikelihood", request, answer)
            out.append(answer)
        return out

    def loglikelihood_rolling(self, requests: list[Any], disable_tqdm: bool = False) -> list[float]:
        # a line every NUGGET_PROGRESS_SECONDS: a system's streams over a task's documents take minutes
        progress = LoopProgress(f"nugget2d harness {self.settings.system} rolling", len(requests), "documents",
                                progress_logger("nugget.harness"))
        out = []
        for request in requests:
            (text,) = request.args
            value = scoring.rolling_logprob(self.model, self.settings, [self.prefix_token_id, *self.tok_encode(text)])
            self.cache_hook.add_partial("loglikelihood_rolling", (text,), value)
            out.append(value)
            progress.advance()
        return out

    def generate_until(self, requests: list[Any], disable_tqdm: bool = False) -> list[str]:
        groups: dict[str, list[int]] = {}
        for i, request in enumerate(requests):
            groups.setdefault(repr(sorted(request.args[1].items())), []).append(i)
        out: dict[int, str] = {}
        eos_text = self.tokenizer.decode(self.eot_token_id)
        for rows in groups.values():
            kwargs = dict(requests[rows[0]].args[1])
            if kwargs.pop("do_sample", False) or kwargs.get("temperature", 0.0):
                raise ValueError("generate_until: nugget2d decodes greedily; the task asks for sampling "
                                 f"(do_sample / temperature in {requests[rows[0]].args[1]})")
            until = handle_stop_sequences(kwargs.pop("until", None), eos=eos_text)
            max_new = int(kwargs.pop("max_gen_toks", self.max_gen_toks))
            contexts = [self.tok_encode(requests[i].args[0]) for i in rows]
            tokens = scoring.generate(self.model, self.settings, contexts, max_new,
                                      self.tokenizer.eos_token_id, self._pad_id)
            for i, ids in zip(rows, tokens, strict=True):
                text = postprocess_generated_text(self.tokenizer.decode(ids, skip_special_tokens=True), until, None)
                self.cache_hook.add_partial("generate_until", requests[i].args, text)
                out[i] = text
        return [out[i] for i in range(len(requests))]


def _batch_size(value: int | str) -> int:
    """lm_eval hands ``--batch_size`` as a string; nugget2d takes a fixed size."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and value.isdigit():
        return int(value)
    raise ValueError(f"batch_size: value {value!r} must be an int >= 1 (nugget2d has no automatic batch size)")
