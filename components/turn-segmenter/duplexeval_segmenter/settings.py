"""The stage's settings: defaults, checks (one line each), and the resolved record.

Config keys (schemas/config-turn-segmenter.schema.json):
  benchmark        the benchmark whose `segment` hook the stage asks: the LLM segmenter's prompt
                   and transcript, and mode "samples"'s stage
  mode             "segment" (the default: segmentation.json per dialogue) or "samples" (the
                   benchmark's samples cut from the segmentations; it takes only benchmark, mode,
                   max_word_gap_s and workers)
  segmenter        "llm" or "offline"; default "llm" when `llm` is set, else "offline"
  llm              {"backend": "openai" | "local-llm", "args": {the judge's arguments}}
  runs             LLM segmentations per dialogue (6)
  iou_threshold    clustering IoU (0.3)
  min_votes        votes a candidate needs (2)
  median           "upper" (the released code's) or "middle"
  merge_overlaps   the paper's step 4 (true)
  first_seed       run k is sent with seed first_seed + k (0)
  min_parsed_runs  parsed runs a dialogue needs (default: all `runs`)
  span_start_s, span_end_s   the part the LLM is asked to segment and the offline turns kept
                   (0 and the dialogue end)
  dialogue_end_s   the dialogue's end (default: the channels' duration_s, the larger)
  max_word_gap_s   joining words into transcript lines when a channel has no segments (0.5)
  offline          {rule: gap-v2 (default) | gap-v1, speech_source: auto|vad|words, min_silence_s,
                   max_gap_s, min_response_s, talkover_pause_s and talkover_hold_s (gap-v2 only),
                   backchannel_max_s (gap-v1 only)}
  workers          dialogues at once (1)
"""

from __future__ import annotations

from duplexeval_common.errors import DuplexEvalError

from . import offline
from .voting import MEDIANS, MIN_VOTES, OVERLAP, RUNS, finite

SPEECH_SOURCES = ("auto", "vad", "words")
MODES = ("segment", "samples")
SAMPLES_KEYS = ("benchmark", "mode", "max_word_gap_s", "workers")


def resolve(config: dict) -> dict:
    """Every setting, defaults filled in; a bad value is a one-line DuplexEvalError."""
    c = dict(config)
    mode = c.get("mode", "segment")
    if mode not in MODES:
        raise DuplexEvalError(f"turn-segmenter: mode must be {' or '.join(MODES)}, not {mode!r}")
    if mode == "samples":
        return resolve_samples(c)
    seg = c.get("segmenter") or ("llm" if c.get("llm") else "offline")
    if seg not in ("llm", "offline"):
        raise DuplexEvalError(f"turn-segmenter: segmenter must be llm or offline, not {seg!r}")
    if seg == "llm" and not c.get("llm"):
        raise DuplexEvalError('turn-segmenter: segmenter "llm" needs the llm setting '
                              '({"backend": "openai", "args": {"model": ..., "base_url": ...}})')
    runs = c.get("runs", RUNS)
    out = {
        "segmenter": seg,
        "runs": runs,
        "iou_threshold": c.get("iou_threshold", OVERLAP),
        "min_votes": c.get("min_votes", MIN_VOTES),
        "median": c.get("median", "upper"),
        "merge_overlaps": c.get("merge_overlaps", True),
        "first_seed": c.get("first_seed", 0),
        "min_parsed_runs": c.get("min_parsed_runs", runs),
        "span_start_s": c.get("span_start_s", 0.0),
        "span_end_s": c.get("span_end_s"),
        "dialogue_end_s": c.get("dialogue_end_s"),
        "max_word_gap_s": c.get("max_word_gap_s", 0.5),
        "offline": _offline(c.get("offline")),
        "workers": c.get("workers", 1),
        "mode": mode,
    }
    unknown = sorted(set(c) - {*out, "llm", "benchmark"})
    if unknown:
        raise DuplexEvalError(f"turn-segmenter: unknown setting(s) {', '.join(unknown)}")
    if seg == "llm":
        out["llm"] = {"backend": c["llm"].get("backend", "openai"), "args": dict(c["llm"].get("args") or {})}
    _check(out)
    return out


def _offline(given: object) -> dict:
    """The offline settings: the rule and the parameters it reads, defaults filled in."""
    if given is None:
        given = {}
    if not isinstance(given, dict):
        raise DuplexEvalError(f"turn-segmenter: offline must be an object, got {given!r}")
    unknown = sorted(set(given) - set(offline.DEFAULTS))
    if unknown:
        raise DuplexEvalError(f"turn-segmenter: unknown offline setting(s) {', '.join(unknown)} "
                              f"(known: {', '.join(sorted(offline.DEFAULTS))})")
    rule = given.get("rule", offline.DEFAULT_RULE)
    if rule not in offline.RULES:
        raise DuplexEvalError(f"turn-segmenter: offline.rule must be {' or '.join(offline.RULES)}, got {rule!r}")
    extra = sorted(set(given) - {"rule", *offline.PARAMETERS[rule]})
    if extra:
        others = [r for r in offline.RULES if set(extra) <= set(offline.PARAMETERS[r])]
        raise DuplexEvalError(f"turn-segmenter: offline setting(s) {', '.join(extra)} do not apply to rule {rule}"
                              + (f" (rule {others[0]} reads them)" if others else ""))
    return {"rule": rule, **{k: given.get(k, offline.DEFAULTS[k]) for k in offline.PARAMETERS[rule]}}


def resolve_samples(c: dict) -> dict:
    """The settings of mode "samples" (the segmenter's settings do not apply there)."""
    unknown = sorted(set(c) - set(SAMPLES_KEYS))
    if unknown:
        raise DuplexEvalError(f"turn-segmenter: mode samples takes only {', '.join(SAMPLES_KEYS)}; "
                              f"not {', '.join(unknown)}")
    out = {"mode": "samples", "max_word_gap_s": c.get("max_word_gap_s", 0.5), "workers": c.get("workers", 1)}
    if not (finite(out["max_word_gap_s"]) and out["max_word_gap_s"] >= 0):
        raise DuplexEvalError(f"turn-segmenter: max_word_gap_s must be a number of at least 0, "
                              f"got {out['max_word_gap_s']!r}")
    if not _int(out["workers"], 1):
        raise DuplexEvalError(f"turn-segmenter: workers must be an integer of at least 1, got {out['workers']!r}")
    return out


def _int(v: object, lo: int) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= lo


def _check(s: dict) -> None:
    def bad(name: str, want: str) -> None:
        raise DuplexEvalError(f"turn-segmenter: {name} must be {want}, got {_get(s, name)!r}")
    if not _int(s["runs"], 1):
        bad("runs", "an integer of at least 1")
    if not (finite(s["iou_threshold"]) and 0 < s["iou_threshold"] <= 1):
        bad("iou_threshold", "a number in (0, 1]")
    if not _int(s["min_votes"], 1):
        bad("min_votes", "an integer of at least 1")
    if s["median"] not in MEDIANS:
        bad("median", " or ".join(MEDIANS))
    if not isinstance(s["merge_overlaps"], bool):
        bad("merge_overlaps", "true or false")
    if not _int(s["first_seed"], 0):
        bad("first_seed", "an integer of at least 0")
    if not (_int(s["min_parsed_runs"], 1) and s["min_parsed_runs"] <= s["runs"]):
        bad("min_parsed_runs", f"an integer from 1 to runs ({s['runs']})")
    for name in ("span_start_s", "max_word_gap_s"):
        if not (finite(s[name]) and s[name] >= 0):
            bad(name, "a number of at least 0")
    for name in ("span_end_s", "dialogue_end_s"):
        if s[name] is not None and not (finite(s[name]) and s[name] > 0):
            bad(name, "a number above 0 or null")
    if s["span_end_s"] is not None and s["span_end_s"] <= s["span_start_s"]:
        bad("span_end_s", f"above span_start_s ({s['span_start_s']})")
    o = s["offline"]
    if o["speech_source"] not in SPEECH_SOURCES:
        bad("offline.speech_source", " or ".join(SPEECH_SOURCES))
    for name in ("min_silence_s", "max_gap_s", "min_response_s", "backchannel_max_s", "talkover_pause_s",
                 "talkover_hold_s"):
        if name in o and not (finite(o[name]) and o[name] >= 0):
            bad(f"offline.{name}", "a number of at least 0")
    if not _int(s["workers"], 1):
        bad("workers", "an integer of at least 1")


def _get(s: dict, dotted: str) -> object:
    for part in dotted.split("."):
        s = s[part]
    return s
