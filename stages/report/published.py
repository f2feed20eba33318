"""Published numbers of the two papers, as data: ``PUBLISHED[table_id][row_id][column]``.

Every table names its source (paper, table) so the report can cite each cell. These
values are only ever shown in the report's "published" column, never as measurements.
Sources: the Nugget paper (Qin & Van Durme, ICML 2023) and the Nugget2D paper; full
references in ``docs/papers.md``.
"""

from __future__ import annotations

from typing import Any

SOURCES: dict[str, str] = {
    "nugget_fig4": "Nugget (ICML 2023) §5.1 text on figure 4 (dev set of WMT19 en-zh)",
    "nugget_fig5": "Nugget (ICML 2023) §5.2 text on figure 5 (AE, r = 0.1, 128 documents)",
    "nugget_appD": "Nugget (ICML 2023) appendix D, fig. 12: 9 WMT19 languages (no numbers in the text)",
    "nugget_table2": "Nugget (ICML 2023) table 2: PI / RR, MRR x 100",
    "nugget_table3": "Nugget (ICML 2023) table 3: WikiText-103 LM perplexity",
    "nugget_table4": "Nugget (ICML 2023) table 4: ablations, PI / RR MRR x 100 (MT, r = 0.1)",
    "nugget2d_table1": "Nugget2D table 1: autoregressive LM perplexity (LLaMA-2-7B)",
    "nugget2d_table3": "Nugget2D table 3: SQuAD accuracy, zero-shot (LLaMA-2-7B-chat)",
    "nugget2d_table4": "Nugget2D table 4: CNN/DailyMail ROUGE (LLaMA-2-7B-chat)",
    "nugget2d_autoencoding": "Nugget2D abstract and §4 (fig. 5 gives no numbers in the text): autoencoding "
                             "BLEU (LLaMA-7B, the Pile)",
    "nugget2d_tokens": "Nugget2D §4.3 (fig. 5 right): nugget tokens are 'mostly clausal text delimiters' "
                       "(no numbers in the text)",
}

PUBLISHED: dict[str, dict[str, dict[str, Any]]] = {
    # "the BLEU value is higher than 0.99 when r >= 0.1" (AE); the figure gives no other numbers
    "nugget_fig4": {
        "ae_r>=0.1": {"bleu": "> 99 (0.99 on the paper's 0-1 scale)"},
    },
    # "the type 'the', which makes up 5.2% of all tokens in the corpus, accounts for only 0.7% of selected nuggets"
    "nugget_fig5": {
        "the_ae": {"share_nuggets": 0.7, "share_text": 5.2},
    },
    "nugget_table2": {
        "nugget_ae_0.25": {"pi": 92.30, "rr": 44.81},
        "nugget_mt_0.05": {"pi": 92.11, "rr": 40.54},
        "nugget_mt_0.1": {"pi": 96.69, "rr": 50.04},
        "nugget_mt_0.15": {"pi": 97.31, "rr": 52.36},
        "nugget_mt_0.25": {"pi": 97.38, "rr": 56.51},
        "tsdae_ae": {"pi": 95.59, "rr": 50.48},
        "tsdae_mt": {"pi": 95.04, "rr": 45.86},
        "colbart": {"pi": 94.83, "rr": 52.44},
    },
    "nugget_table3": {
        "nugget_0.05": {"h=1": 29.88, "h=2": 29.25, "h=4": 28.24, "h=8": 28.14},
        "nugget_0.1": {"h=1": 29.83, "h=2": 29.21, "h=4": 28.44, "h=8": 28.10},
        "tsdae": {"h=1": 30.09, "h=2": 29.55, "h=4": 29.01, "h=8": 28.77},
        "compressive": {"h=4": 30.52},
        "transformer": {"h=0": 31.46},
    },
    "nugget_table4": {
        "l=3": {"pi": 96.69, "rr": 50.04},
        "l=0": {"pi": 69.82, "rr": 29.20},
        "l=6": {"pi": 93.24, "rr": 48.84},
        "l=9": {"pi": 84.03, "rr": 47.36},
        "no_feedback": {"pi": 96.29, "rr": 49.81},
        "chunk": {"pi": 95.56, "rr": 42.41},
        "nugget_r0033": {"pi": 89.07, "rr": 49.49},
        "sentence": {"pi": 87.91, "rr": 38.40},
    },
    "nugget2d_table1": {
        "full_128": {"wikitext_subword": 6.87, "wikitext_word": 11.69, "pile_subword": 5.35},
        "compressive_128": {"wikitext_subword": 7.09, "wikitext_word": 12.18, "pile_subword": 4.93},
        "nugget2d_128": {"wikitext_subword": 6.58, "wikitext_word": 11.06, "pile_subword": 4.49},
        "full_64": {"wikitext_subword": 7.95, "wikitext_word": 14.08, "pile_subword": 5.80},
        "compressive_64": {"wikitext_subword": 7.64, "wikitext_word": 13.39, "pile_subword": 5.65},
        "nugget2d_64": {"wikitext_subword": 6.91, "wikitext_word": 11.78, "pile_subword": 5.01},
    },
    "nugget2d_table3": {
        "nodoc": {"accuracy": 1.4},
        "lmsumm_10x": {"accuracy": 30.9},
        "full": {"accuracy": 64.5},
        "nugget2d_5x": {"accuracy": 59.1},
        "nugget2d_10x": {"accuracy": 49.8},
    },
    "nugget2d_table4": {
        "full_zs": {"rouge1": 32.5, "rouge2": 9.7, "rougeL": 28.2},
        "full_ft": {"rouge1": 37.7, "rouge2": 15.6, "rougeL": 35.3},
        "nugget2d_10x": {"rouge1": 39.9, "rouge2": 14.6, "rougeL": 37.0},
    },
    # "Nugget2D can shrink context at a 20x compression ratio with a BLEU score of 98% for
    # reconstruction" (abstract); the lengths behind it are not stated
    "nugget2d_autoencoding": {
        "nugget2d_0.05": {"bleu": "98 (abstract: 20x; lengths not stated)"},
        "nugget2d_0.1": {},
        "icae_0.05": {},
        "icae_0.1": {},
    },
    # "the tokens preferred by Nugget2D are mostly clausal text delimiters, such as
    # punctuation marks, new line symbols, and conjunction words" (§4.3; no numbers)
    "nugget2d_tokens": {
        "punctuation": {"share_nuggets": "most nuggets are delimiters (no number)"},
        "line_break": {"share_nuggets": "most nuggets are delimiters (no number)"},
    },
}


def published(table: str, row: str, column: str) -> Any:
    """The published value of a cell, or None where the paper has none."""
    return PUBLISHED.get(table, {}).get(row, {}).get(column)
