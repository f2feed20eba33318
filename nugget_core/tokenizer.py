"""A byte-level BPE tokenizer trained in-process (the tokenizer stage; tiny profiles).

No hub access: the vocabulary is learned from the given texts in seconds on CPU.
"""

from __future__ import annotations

from collections.abc import Iterable

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
from transformers import PreTrainedTokenizerFast

# BART's special-token layout: ids 0..3.
SPECIAL_TOKENS = ("<s>", "<pad>", "</s>", "<unk>")


def train_bpe_tokenizer(
    texts: Iterable[str], vocab_size: int = 1000, min_frequency: int = 2
) -> PreTrainedTokenizerFast:
    """Train a byte-level BPE on ``texts``; encodings get BART's ``<s> ... </s>``."""
    tokenizer = Tokenizer(models.BPE(unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=min_frequency,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,  # its bar is redrawn into blank lines of a log
    )
    tokenizer.train_from_iterator(texts, trainer=trainer)
    bos, eos = tokenizer.token_to_id("<s>"), tokenizer.token_to_id("</s>")
    tokenizer.post_processor = processors.TemplateProcessing(
        single="<s> $A </s>",
        pair="<s> $A </s> </s> $B </s>",
        special_tokens=[("<s>", bos), ("</s>", eos)],
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        bos_token="<s>",
        eos_token="</s>",
        pad_token="<pad>",
        unk_token="<unk>",
    )
