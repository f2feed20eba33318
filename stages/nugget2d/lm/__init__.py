"""The Nugget2D evaluation recipes (QA, summarisation, language modelling) and their parts: prompts,
decoding cost, scoring, the KV presses."""
