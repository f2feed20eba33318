"""Published numbers of the two papers, as data: ``PUBLISHED[table_id][row_id][column]``.

Every table names its source (paper, table) so the report can cite each cell. These
values are only ever shown in the report's "published" column, never as measurements.
Sources: the Nugget paper (Qin & Van Durme, ICML 2023), the Nugget2D paper and the RE paper
("restorable embeddings": one restorable vector per text, its tables 2-4, 8-10); full
references in ``docs/papers.md``. The RE tables were read from an OCR copy of the paper;
a cell that copy does not show unambiguously is `UNREADABLE`, never a guess.
"""

from __future__ import annotations

from typing import Any

UNREADABLE = "unreadable in our copy of the paper"

RE_COLUMNS = ("ppl", "rouge1", "rouge2", "rougeL")
Cells = tuple[float | str, float | str, float | str, float | str]

# RE table 8 as printed: sentences, configuration (RE table 1), decoder, then PPL, R-1, R-2, R-L of the
# [CLS] embedding and of the mean-pooled one. Row ids: "{sentences}|{configuration}|{cls|mean}|{decoder}".
# Checked twice against the OCR text. Tables 2 (1 sentence) and 3 ((c) / (d), mean pooling, cross and gating,
# 1 / 3 / 5 sentences) were compared cell by cell with table 8: every cell they print equals table 8's, and
# table 3 lends 5 (c) cross R-2 (15.09), which table 8's OCR lost.
# Printed oddities kept as printed (tables 2 and 8 agree on them, so they are the paper's, not the OCR's):
# 1 (a) input [CLS] PPL "6.178" (3 decimals; kept as text so it is shown as printed), 1 (b) input [CLS] PPL
# 1.79 (every other [CLS] PPL of 1 sentence is 6.04-6.30), 1 (a) gating [CLS] = 1 (d) cross [CLS] (11.21 /
# 0.55 / 8.21).
_RE_TABLE8: list[tuple[int, str, str, Cells, Cells]] = [
    (1, "a", "input", ("6.178", 9.87, 0.79, 8.09), (1.16, 93.37, 82.93, 89.72)),
    (1, "a", "cross", (6.10, 7.09, 0.19, 6.24), (1.10, 95.14, 87.80, 92.76)),
    (1, "a", "gating", (6.04, 11.21, 0.55, 8.21), (1.04, 97.76, 94.63, 96.94)),
    (1, "b", "input", (1.79, 13.33, 0.75, 9.53), (2.24, 65.99, 34.45, 50.96)),
    (1, "b", "cross", (6.22, 12.29, 0.78, 9.30), (2.04, 67.97, 37.85, 54.00)),
    (1, "b", "gating", (6.16, 11.13, 0.29, 8.47), (1.93, 70.54, 40.83, 56.81)),
    (1, "c", "input", (6.18, 13.32, 0.75, 9.53), (1.15, 92.63, 83.34, 89.63)),
    (1, "c", "cross", (6.10, 9.95, 0.21, 8.31), (1.12, 94.13, 86.26, 91.62)),
    (1, "c", "gating", (6.04, 10.81, 0.56, 8.07), (1.03, 98.32, 96.30, 97.91)),
    (1, "d", "input", (6.30, 11.86, 0.77, 8.84), (1.34, 84.77, 69.68, 81.12)),
    (1, "d", "cross", (6.22, 11.21, 0.55, 8.21), (1.29, 87.18, 73.07, 83.79)),
    (1, "d", "gating", (6.16, 9.88, 0.58, 7.57), (1.09, 95.95, 91.07, 95.04)),
    (3, "a", "input", (8.13, 13.33, 0.48, 11.08), (2.33, 58.98, 23.10, 40.36)),
    (3, "a", "cross", (8.04, 13.14, 0.26, 9.55), (1.83, 64.86, 30.42, 47.79)),
    (3, "a", "gating", (7.90, 18.41, 1.14, 12.72), (1.49, 70.79, 43.06, 58.97)),
    # [CLS] R-2 reads "1000000000000000000000000000000000000" (37 characters)
    (3, "b", "input", (8.33, 12.70, UNREADABLE, 10.45), (4.88, 43.60, 12.08, 24.60)),
    (3, "b", "cross", (8.21, 14.17, 0.34, 10.85), (4.44, 45.37, 12.87, 25.07)),
    (3, "b", "gating", (8.08, 14.80, 0.79, 10.86), (4.09, 47.52, 13.81, 25.99)),
    (3, "c", "input", (8.14, 14.32, 0.32, 11.36), (2.31, 54.43, 21.22, 39.01)),
    (3, "c", "cross", (8.04, 14.48, 0.79, 10.88), (1.89, 63.08, 29.25, 46.87)),
    (3, "c", "gating", (7.91, 14.67, 0.42, 11.10), (1.37, 72.11, 50.45, 64.16)),
    (3, "d", "input", (8.34, 11.20, 0.13, 9.70), (2.96, 51.82, 18.70, 38.18)),
    (3, "d", "cross", (8.22, 15.07, 0.23, 11.76), (2.48, 59.00, 24.39, 44.09)),
    (3, "d", "gating", (8.09, 16.81, 1.11, 11.98), (1.75, 67.14, 39.97, 58.43)),
    (5, "a", "input", (8.80, 11.98, 0.24, 10.69), (3.60, 49.63, 13.45, 28.19)),
    # mean R-1 / R-2 / R-L read "49.63 13.45 28.19": the input row's, repeated (its PPL 2.75 is also the gating
    # row's; kept: a single equal value is no evidence of a repeat)
    (5, "a", "cross", (8.67, 15.14, 0.24, 12.53), (2.75, UNREADABLE, UNREADABLE, UNREADABLE)),
    (5, "a", "gating", (8.53, 11.19, 0.87, 8.85), (2.75, 55.36, 18.54, 35.98)),
    # the (b) block reads: "input 9.02 13.98 0.09 12.43 6.30 $\frac{267 \pm 0.4}{38.24}$ 8.87 20.48",
    # "input 8.87 13.98 0.09 12.43 5.80 41.25 9.63 21.00", an empty "cross" line, then
    # "gating 8.74 11.46 0.12 $\frac{10.12}{10.12}$ 5.39 43.66 10.60 21.79". The second row is the cross row
    # (three rows in the order input, cross, gating as in every block; PPLs falling as in every block). Its
    # [CLS] R-1 / R-2 / R-L repeat the input row's: unreadable, as 5 (a) cross mean's. The input mean R-1
    # ("267 ± 0.4" over "38.24") is unreadable; gating [CLS] R-L prints 10.12 twice: 10.12.
    (5, "b", "input", (9.02, 13.98, 0.09, 12.43), (6.30, UNREADABLE, 8.87, 20.48)),
    (5, "b", "cross", (8.87, UNREADABLE, UNREADABLE, UNREADABLE), (5.80, 41.25, 9.63, 21.00)),
    (5, "b", "gating", (8.74, 11.46, 0.12, 10.12), (5.39, 43.66, 10.60, 21.79)),
    # the (c) block prints input and cross on one line ("input 8.80 8.66 4.71 16.96 0.09 0.80 4.42 12.30 3.36 2.80
    # 46.57 52.35 12.34 28.54 31.28": two values per cell, input's first) with one mean R-2, 12.34, which the
    # block's heading line repeats ("(random in 12.34 itialization)"). Cross's is 15.09 (table 3), so 12.34 is
    # input's.
    (5, "c", "input", (8.80, 4.71, 0.09, 4.42), (3.36, 46.57, 12.34, 28.54)),
    (5, "c", "cross", (8.66, 16.96, 0.80, 12.30), (2.80, 52.35, 15.09, 31.28)),
    (5, "c", "gating", (8.54, 7.42, 0.29, 6.15), (2.08, 52.82, 18.91, 36.77)),
    (5, "d", "input", (9.02, 8.02, 0.30, 7.38), (4.19, 45.31, 11.46, 27.65)),
    (5, "d", "cross", (8.87, 12.02, 0.34, 10.80), (3.50, 51.30, 14.58, 31.00)),
    (5, "d", "gating", (8.75, 17.16, 1.25, 11.79), (2.76, 52.38, 17.92, 36.83)),
]

RE_RECALL = ("r@1", "r@5", "r@20", "r@100")
# RE table 9 as printed: row id, R@1, R@5, R@20, R@100. "pretrained|{layers}": the paper's "random initialize"
# rows (T5-small, + 3 randomly initialised layers: no restoration training); "{freeze|grad}|{sentences}|{layers}":
# encoders of configurations (b) / (d) (freeze) and (a) / (c) (grad) trained to restore texts of that many
# sentences. Table 4's R@20 / R@100 (T5-small, (a)-(d) x 1 / 3 / 5) equal these cell by cell.
_RE_TABLE9: list[tuple[str, float, float, float, float]] = [
    ("pretrained|0", 14.77, 32.68, 49.58, 67.12),
    ("freeze|1|0", 21.50, 44.11, 63.61, 78.39),
    ("freeze|3|0", 21.43, 43.96, 62.56, 77.71),
    ("freeze|5|0", 21.18, 43.61, 62.18, 77.67),
    ("grad|1|0", 24.34, 47.49, 64.33, 78.34),
    ("grad|3|0", 22.29, 45.05, 63.09, 78.34),
    ("grad|5|0", 22.18, 45.08, 63.09, 77.88),
    ("pretrained|3", 16.88, 37.90, 55.73, 72.37),
    ("freeze|1|3", 26.92, 52.54, 70.30, 83.32),
    ("freeze|3|3", 24.97, 50.02, 68.70, 82.29),
    ("freeze|5|3", 25.05, 49.56, 68.46, 82.13),
    ("grad|1|3", 21.53, 45.97, 64.07, 78.05),
    ("grad|3|3", 20.97, 44.83, 63.13, 77.82),
    ("grad|5|3", 22.41, 45.13, 63.61, 78.30),
]

RE_TASKS = ("sst2", "sst5", "trec_coarse", "trec_fine")
# RE table 10 (appendix E), its SST-2 / SST / TREC half, as printed: row id (table 9's), GLUE SST-2, "SSTDataset", TREC
# coarse, TREC fine (accuracy). The OCR grew the table line by line (lines 1364-1379 of our copy): each line adds a row
# label and one value per column, so a row's cells are those its line adds; each cell below is the same in every
# later line that holds it, but for two OCR repeats (SST-2 "92.55" three times where the rows' line has two; SST
# "85.96" three times, "85.69" six times): the count is the rows'. No line reaches the last two rows (grad x 3 / 5
# sentences x 3 layers): unreadable. The table's other half (MNLI, QNLI, WNLI, MRPC, QQP: sentence-pair tasks) is not
# transcribed: eval_re_downstream does not run it.
_RE_TABLE10: list[tuple[str, float | str, float | str, float | str, float | str]] = [
    ("pretrained|0", 91.28, 85.42, 97.02, 85.91),
    ("freeze|1|0", 91.74, 86.05, 96.83, 85.32),
    ("freeze|3|0", 91.17, 85.96, 96.03, 85.71),
    ("freeze|5|0", 91.63, 85.96, 96.23, 83.93),
    ("grad|1|0", 86.93, 77.90, 93.85, 78.17),
    ("grad|3|0", 87.84, 78.08, 94.25, 80.16),
    ("grad|5|0", 87.96, 79.17, 94.84, 81.15),
    ("pretrained|3", 92.09, 85.78, 97.02, 92.46),
    ("freeze|1|3", 92.55, 85.69, 96.83, 89.48),
    ("freeze|3|3", 92.55, 85.33, 97.22, 91.47),
    ("freeze|5|3", 91.97, 86.50, 96.43, 91.67),
    # SST 76.54: the last value of the one line that adds this row (its SST column also repeats 85.69 six times)
    ("grad|1|3", 87.16, 76.54, 92.66, 83.13),
    ("grad|3|3", UNREADABLE, UNREADABLE, UNREADABLE, UNREADABLE),
    ("grad|5|3", UNREADABLE, UNREADABLE, UNREADABLE, UNREADABLE),
]


def _re_table8() -> dict[str, dict[str, float | str]]:
    return {f"{k}|{config}|{pooling}|{decoder}": dict(zip(RE_COLUMNS, cells, strict=True))
            for k, config, decoder, cls, mean in _RE_TABLE8 for pooling, cells in (("cls", cls), ("mean", mean))}


def _re_table9() -> dict[str, dict[str, float]]:
    return {row: dict(zip(RE_RECALL, recall, strict=True)) for row, *recall in _RE_TABLE9}


def _re_table10() -> dict[str, dict[str, float | str]]:
    return {row: dict(zip(RE_TASKS, cells, strict=True)) for row, *cells in _RE_TABLE10}


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
    "re_table8": "RE appendix C, table 8: restoration of 1 / 3 / 5 C4 RealNewsLike sentences (validation split), "
                 "PPL and ROUGE-1/2/L x 100, T5-small; its 1-sentence rows are RE table 2, its mean-pooling (c) / (d) "
                 "cross and gating rows RE table 3",
    "re_table9": "RE appendix D, table 9: Natural Questions passage retrieval over DPR's 21,015,324 Wikipedia "
                 "passages, recall@k x 100 (its R@20 / R@100 columns are RE table 4)",
    "re_table10": "RE appendix E, table 10: accuracy on GLUE SST-2, the SST ('SSTDataset') and TREC coarse / fine "
                  "'when using the sentence embedding of the proposed model' (T5-small; protocol not stated)",
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
    "re_table8": _re_table8(),
    "re_table9": _re_table9(),
    "re_table10": _re_table10(),
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
