"""One dialogue's segmentation record (segmentation.json) and the stage-level files.

Per dialogue `samples/<subset>/<id>/segmentation.json` (schemas/segmentation.schema.json):
the user turns (start, end, votes, merged), the response windows, the continuations, the
dialogue end and span, every setting, the inputs (file, sha256, what was read), and either the
LLM's record (its settings, each run's ledger entry without its wall time, the voting
candidates) or the offline rule and its parameters. Same inputs (and, for the LLM, the same
cached replies), same bytes.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from duplexeval_common.errors import SampleError
from duplexeval_common.stage import SampleContext

from . import channels, llm, offline, voting

FORMAT = 1
FILE = "segmentation.json"
SCHEMA = "segmentation"


@dataclass
class State:
    """What the stage keeps between setup, the dialogues and finalize."""
    settings: dict
    hook: object | None = None       # the benchmark's segment hook (the LLM segmenter's prompt, transcript)
    judge: object | None = None
    llm_record: dict | None = None
    fatal: llm.Fatal = field(default_factory=llm.Fatal)
    ledger: dict[str, list] = field(default_factory=dict)  # sample -> judgements made in this run


def dialogue_end(s: dict, user: channels.Channel, model: channels.Channel) -> tuple[float, str]:
    if s["dialogue_end_s"] is not None:
        return float(s["dialogue_end_s"]), "config dialogue_end_s"
    durs = [(c.duration_s, c.file) for c in (user, model) if c.duration_s is not None]
    if not durs:
        raise SampleError("-", "no dialogue end: neither user.json nor model.json has duration_s, "
                               "and dialogue_end_s is not set")
    d, f = max(durs)
    return d, f"{f} duration_s"


def segment_dialogue(ctx: SampleContext, state: State) -> dict:
    s = state.settings
    key = ctx.id
    user, model = channels.read_channel(ctx, "user"), channels.read_channel(ctx, "model")
    try:
        end, end_source = dialogue_end(s, user, model)
    except SampleError as exc:
        raise SampleError(key, exc.problem) from None
    span = (float(s["span_start_s"]), float(s["span_end_s"]) if s["span_end_s"] is not None else end)
    if not span[0] < span[1]:
        raise SampleError(key, f"the span [{span[0]}, {span[1]}] s is empty (span_start_s against the "
                               f"dialogue end {end} s from {end_source})")
    u_lines, u_from = channels.asr_segments(user, s["max_word_gap_s"])
    m_lines, m_from = channels.asr_segments(model, s["max_word_gap_s"])
    model_ipus = channels.merge_intervals([(x.start, x.end) for x in m_lines])
    inputs = {"user": {"file": user.file, "sha256": user.sha256, "transcript_lines": u_from,
                       "lines": len(u_lines)},
              "model": {"file": model.file, "sha256": model.sha256, "transcript_lines": m_from,
                        "lines": len(m_lines)}}
    rec: dict = {"format": FORMAT, "dialogue": key, "method": s["segmenter"]}
    if s["segmenter"] == "llm":
        rows = [{"speaker": "user", "start": x.start, "end": x.end, "text": x.text} for x in u_lines] + \
               [{"speaker": "model", "start": x.start, "end": x.end, "text": x.text} for x in m_lines]
        text = state.hook.transcript(rows)
        if not rows:
            raise SampleError(key, "both channels are empty: nothing for the LLM to segment")
        js, runs = llm.run(state.hook, state.judge, text, span, s["runs"], s["first_seed"], s["min_parsed_runs"],
                           key, state.fatal)
        state.ledger[key] = js
        v = voting.vote(runs, s["iou_threshold"], s["min_votes"], s["median"], s["merge_overlaps"])
        turns = v.turns
        rec["llm"] = {**(state.llm_record or {}),
                      "runs": [{"run": k + 1, **j.record()} for k, j in enumerate(js)],
                      "candidates": v.candidates}
        rec["offline"] = None
    else:
        o = s["offline"]
        us, u_src = channels.speech(user, o["speech_source"], key)
        ms, m_src = channels.speech(model, o["speech_source"], key)
        probs = user.probs if o["rule"] == "gap-v2" and u_src == "vad_segments" else None
        turns = offline.segment(us, ms, span, o["min_silence_s"], o["max_gap_s"], o["min_response_s"],
                                o.get("backchannel_max_s", offline.DEFAULTS["backchannel_max_s"]),
                                rule=o["rule"], probs=probs,
                                talkover_pause_s=o.get("talkover_pause_s", offline.DEFAULTS["talkover_pause_s"]),
                                talkover_hold_s=o.get("talkover_hold_s", offline.DEFAULTS["talkover_hold_s"]))
        inputs["user"]["speech"], inputs["model"]["speech"] = u_src, m_src
        inputs["user"]["turn_ends"] = "vad_probs" if probs is not None else "speech"
        rec["llm"] = None
        rec["offline"] = {"rule": o["rule"], "parameters": {k: v for k, v in o.items() if k != "rule"}}
    if not turns:
        raise SampleError(key, f"no user turn found in [{span[0]}, {span[1]}] s ({s['segmenter']} segmenter)")
    if turns[-1].end > end + 0.01:
        raise SampleError(key, f"a turn ends at {turns[-1].end} s, after the dialogue end {end} s "
                               f"({end_source})")
    rec.update({
        "turns": [t.as_dict() for t in turns],
        "windows": voting.windows(turns, end),
        "continuations": voting.continuations(turns, model_ipus),
        "dialogue_end_s": end, "dialogue_end_source": end_source,
        "span": {"start": span[0], "end": span[1]},
        "inputs": inputs,
        "settings": {k: v for k, v in s.items() if k not in ("llm", "workers", "mode")},
    })
    return rec


def process(ctx: SampleContext, state: State) -> None:
    ctx.write_json(FILE, segment_dialogue(ctx, state), SCHEMA)


def release_row(sample_id: str, key: str, rec: dict) -> dict:
    """The released segmentation data's line ({id, filtered_turn, continuation_info}; the file
    semantic_turned_time_v3.jsonl of the MTR-DuplexBench dataset), plus our sample key."""
    return {"id": sample_id, "sample": key,
            "filtered_turn": [{"start": t["start"], "end": t["end"]} for t in rec["turns"]],
            "continuation_info": [{k: v for k, v in c.items() if k != "round"} for c in rec["continuations"]]}
