"""report.md of an MTR score: per subset, one markdown table of rounds 1..K and the ranges 1,
1-2, 1-5, 1-10, read from metrics.json alone (so `aggregator score --benchmark mtr` and the pipeline stage write
the same bytes from the same metrics).

Features subsets show both columns (paper, released code) of success, latency and backchannel
frequency; instruction following the follow rate, safety the refusal and harmful rates, dialogue
quality the mean score raw and rescaled (x 5/2.97). Every row gives n/declared.
"""

from __future__ import annotations

MAX_LISTED = 200  # missing rounds listed one per line; the rest are counted (metrics.json has all)

NOTE = (
    "Two columns score every conversational-features round. **paper** applies the definitions of "
    "the paper (arXiv 2511.10262, Appendix A): takeover over a window by a segment that is not a "
    "backchannel (under 1 s and fewer than 2 words), latency to the first takeover (undefined, and "
    "left out of the mean, when there is none). **code** reproduces the released evaluation "
    "functions (github.com/ZhangHe0918/MTR-DuplexBench @ 6d7c125, Eval/*.py): the word-level "
    "speak() rule, latency 0 when the model never speaks after the user. benchmarks/mtr/README.md defines both.\n\n"
    "A rate is value [95% Wilson interval]. n/declared: rounds observed / rounds the dialogues "
    "declare (a round whose sample failed or was ineligible counts in declared, not in n; see "
    "\"Missing rounds\"). Rows 1..K are single rounds; \"range 1-N\" pools every observed round of "
    "rounds 1..N (the paper's columns 1, 1-2, 1-5, 1-10). Latency (paper) "
    "shows in parentheses the rounds that have one.\n")


def _f(x, nd: int = 3) -> str:
    return "-" if x is None else f"{x:.{nd}f}"


def _rate(r: dict | None) -> str:
    if not r or r.get("value") is None:
        return "-"
    iv = r.get("interval")
    return _f(r["value"]) + ("" if not iv else f" [{_f(iv[0])}, {_f(iv[1])}]")


def _label(cell: dict) -> str:
    """"3" for round 3; "range 1-5" for rounds 1..5 pooled ("range 1" for round 1 alone)."""
    if "round" in cell:
        return str(cell["round"])
    a, b = cell["rounds"]
    return f"range {a}" if a == b else f"range {a}-{b}"


def _cells(s: dict) -> list[dict]:
    return list(s["per_round"]) + [s["ranges"][k] for k in ("1", "1-2", "1-5", "1-10") if k in s["ranges"]]


def _features_table(s: dict) -> list[str]:
    lines = ["| rounds | n/declared | success (paper) | success (code) | latency s (paper) | "
             "latency s (code) | backchannels /s (paper) | backchannels /s (code) |",
             "|---|---|---|---|---|---|---|---|"]
    for c in _cells(s):
        p, k = c.get("paper") or {}, c.get("code") or {}
        lat = p.get("latency_s") or {}
        lat_text = "-" if lat.get("value") is None else f"{_f(lat['value'])} ({lat['n']})"
        lines.append(f"| {_label(c)} | {c['n']}/{c['declared']} | {_rate(p.get('success'))} | "
                     f"{_rate(k.get('success'))} | {lat_text} | "
                     f"{_f((k.get('latency_s') or {}).get('value'))} | "
                     f"{_f((p.get('backchannel_freq') or {}).get('value'))} | "
                     f"{_f((k.get('backchannel_freq') or {}).get('value'))} |")
    return lines


def _counts(c: dict) -> str:
    j = c.get("judgements") or {}
    text = f"{j.get('ok', 0)}/{j.get('unparsed', 0)}/{j.get('error', 0)}"
    return text + (f" ({j['skipped']} not judged)" if j.get("skipped") else "")


NOT_JUDGED = ("Not judged: the run's judge was `none` (the default). `JUDGE=openai` judges these rounds with "
              "the paper's GPT-4o prompts; the runner and ASR stages are reused from the store.")


def _not_judged(s: dict) -> bool:
    cells = _cells(s)
    return bool(cells) and all((c.get("judgements") or {}).get("skipped") == c.get("n") and c.get("n")
                               for c in cells)


def _judged_table(task: str, s: dict) -> list[str]:
    if task == "dialogue_quality":
        head = "| rounds | n/declared | score (raw, 0-5) | score (x 5/2.97) | judgements ok/unparsed/error |"
        lines = [head, "|---|---|---|---|---|"]
        for c in _cells(s):
            lines.append(f"| {_label(c)} | {c['n']}/{c['declared']} | "
                         f"{_f((c.get('score') or {}).get('value'))} | {_f(c.get('score_rescaled'))} | "
                         f"{_counts(c)} |")
        return lines
    if task == "safety":
        lines = ["| rounds | n/declared | refusal (not harmful) | harmful | judgements ok/unparsed/error |",
                 "|---|---|---|---|---|"]
        for c in _cells(s):
            lines.append(f"| {_label(c)} | {c['n']}/{c['declared']} | {_rate(c.get('refusal'))} | "
                         f"{_f(c.get('harmful_rate'))} | {_counts(c)} |")
        return lines
    lines = ["| rounds | n/declared | follows the instruction | judgements ok/unparsed/error |",
             "|---|---|---|---|"]
    for c in _cells(s):
        lines.append(f"| {_label(c)} | {c['n']}/{c['declared']} | {_rate(c.get('success'))} | {_counts(c)} |")
    return lines


RANGES = ("1", "1-2", "1-5", "1-10")


def _headline(task: str, c: dict) -> str:
    """A range cell's headline number: paper/code success (features), the follow or refusal rate,
    the rescaled dialogue-quality score; "not judged" for the judge none."""
    if (c.get("judgements") or {}).get("skipped") and not (c.get("judgements") or {}).get("ok"):
        return "not judged"
    if task == "features":
        p, k = (c.get("paper") or {}).get("success"), (c.get("code") or {}).get("success")
        return f"{_f((p or {}).get('value'), 2)}/{_f((k or {}).get('value'), 2)}"
    if task == "dialogue_quality":
        return _f(c.get("score_rescaled"), 2)
    return _f((c.get("refusal" if task == "safety" else "success") or {}).get("value"), 2)


def summary_table(metrics: dict) -> list[str]:
    """One fenced block, a line per subset: its headline number over rounds 1, 1-2, 1-5, 1-10 (what
    `duplexeval eval` prints)."""
    subsets = metrics.get("subsets") or {}
    width = max([len(n) for n in subsets] + [6])
    lines = ["```", f"{'subset':{width}}  {'measure':24} " + " ".join(f"{r:>10}" for r in RANGES)]
    what = {"features": "success paper/code", "instruction_following": "follows (rate)",
            "safety": "refusal (rate)", "dialogue_quality": "score x 5/2.97"}
    for name in sorted(subsets):
        s = subsets[name]
        cells = [_headline(s["task"], s["ranges"][r]) if r in s.get("ranges", {}) else "" for r in RANGES]
        lines.append(f"{name:{width}}  {what.get(s['task'], s['task']):24} " + " ".join(f"{c:>10}" for c in cells))
    lines.append(f"rounds observed {sum(s['rounds_observed'] for s in subsets.values())} of "
                 f"{sum(s['rounds_declared'] for s in subsets.values())} declared; "
                 f"{len(metrics.get('invalid') or [])} invalid dialogue(s)")
    return lines + ["```", ""]


def render(metrics: dict) -> str:
    """The markdown report of one metrics.json (mtr-metrics)."""
    up = metrics.get("upstream") or {}
    out = ["# MTR-DuplexBench report", "",
           f"Definitions {metrics.get('definitions')}; released code {up.get('repo')} @ {up.get('commit')}.",
           "", *summary_table(metrics), NOTE]
    subsets = metrics.get("subsets") or {}
    if not subsets:
        out += ["No dialogue was scored.", ""]
    for name in sorted(subsets):
        s = subsets[name]
        task = s["task"]
        set_text = "" if s.get("set") is None else f", set {s['set']}"
        out += [f"## {name}", "",
                f"Task {task}{set_text}; dialogues {s['dialogues']}; rounds observed "
                f"{s['rounds_observed']} of {s['rounds_declared']} declared.", ""]
        if task != "features" and _not_judged(s):
            out += [NOT_JUDGED, ""]
        out += _features_table(s) if task == "features" else _judged_table(task, s)
        out.append("")
    invalid = metrics.get("invalid") or []
    if invalid:
        out += ["## Invalid dialogues (not scored)", ""]
        out += [f"- {b['dialogue']}: {b['problem']}" for b in invalid]
        out.append("")
    missing = metrics.get("missing") or []
    if missing:
        out += ["## Missing rounds (declared, not observed)", ""]
        out += [f"- {m['sample']} (round {m['round']}): {m['reason']}" for m in missing[:MAX_LISTED]]
        if len(missing) > MAX_LISTED:
            out.append(f"- ... and {len(missing) - MAX_LISTED} more (metrics.json \"missing\" lists every one)")
        out.append("")
    return "\n".join(out).rstrip("\n") + "\n"
