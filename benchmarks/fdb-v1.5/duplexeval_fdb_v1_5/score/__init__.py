"""The Full-Duplex-Bench v1.5 scoring library: pure functions over arrays, word lists and dicts.

Two columns, as for v1.0 (README.md beside this package, "Scoring"):

- **official**: equal to what upstream's v1.5 scripts (DanielLin94144/Full-Duplex-Bench @ d7336bd,
  v1_v1.5/evaluation/) compute on the same inputs, checked against numbers those scripts printed
  (tests/golden/):
  - `timing`: get_timing.py's VAD segment merging and its two latency lists
    (latency_intervals.json), plus our aggregation of those lists (upstream ships none);
  - `adaptation`: eval_general_before_after.py's word-aligned split, its per-segment features
    (words per minute, pitch and intensity, UTMOSv2 when installed) and its trimmed means;
  - `significance`: significance_test.py's paired t-tests (C_RESPOND samples, MAD outlier rule,
    Holm adjustment);
  - `behavior`: eval_behavior.py's judge request, reply parser, retry seeds and label ratios.
- **unified** (`unified`): the overlap window from metadata.json, stop latency from the overlap's
  start over the samples where the model was speaking then, response latency from the end of
  the user's turn, each checked against the clean run (what the model does anyway is not
  credited to the overlap), Wilson intervals, paired clean-vs-overlap bootstrap intervals.

`checks` turns bad input into one-line InputErrors naming the sample; `vad` holds the Silero
settings each rule uses and the audio feed upstream's scripts give the model.

Nothing here reads a sample folder on its own (the stage hooks do) or imports a component.
"""
