"""The timeline of one MTR dialogue: a PURE function of the parsed script and the line durations.

    pieces(dialogue) -> [Piece(key, voice, text, spoken)]      what to synthesize
    layout(dialogue, durations_s, sample_rate=16000) -> Layout  where every piece goes

`dialogue` is mtr_script.parse_dialogue's result (a features / instruction-following / safety
dialogue with "rounds", or a dialogue-quality one with "lines"). `durations_s` maps every piece
key to its length in seconds: the trimmed TTS audio's length when building a dataset, or modelled
lengths when a benchmark wants the layout without audio. Every position is computed in whole
samples (a duration d becomes round(d * sample_rate) samples), and every time it reports is that
sample index / sample_rate rounded to 6 decimals, so round(t * sample_rate) gives the index back
exactly. Nothing here reads files, draws random numbers or depends on anything but its arguments.

Features / IF / safety (benchmarks/mtr/README.md, "A dialogue"): the opener (GT model line, round 0) starts at
LEAD_S. Round k: the user turn C_k starts `gap_s` after the previous model line ends, or, in an
I round, at `interrupt_at` of the previous response's full length (that response is then cut
CUT_AFTER_S after the interruption start); a P round's turn is two pieces with `pause.length_s`
of silence between; the GT response starts `reply_gap_s` after C_k ends (never before the
previous response's end); a B round's background line starts at `background.at` of the
response's full length and is moved earlier when it would end later than BG_END_MARGIN_S before
the response's end, or later than INTERRUPT_MARGIN_S before the next round's interruption: to 1/4
of the response at the earliest, unless the line is too long to end in time from there, when it
starts as late as it can (never before the response starts); when it cannot fit, LayoutError. The dialogue ends TAIL_S after the last
response. Round k's window is [C_k.start, C_{k+1}.end] with C_{k+1} muted; the last round's
window ends at the dialogue end.

Dialogue quality: line i starts `gap_s` after line i-1 ends (the first: `gap_s` after 0; a
negative gap overlaps the previous line); backchannels start at `at` of their assistant line,
moved earlier to end BG_END_MARGIN_S before it ends and later to start BACKCHANNEL_AFTER_USER_S
after the previous user line, else LayoutError.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Mapping

LEAD_S = 0.5                 # silence before the opener
TAIL_S = 2.0                 # the dialogue ends this long after the last GT model response
CUT_AFTER_S = 0.5            # an interrupted response stops this long after the interruption starts
BG_END_MARGIN_S = 0.2        # a background line ends at least this long before its response ends
INTERRUPT_MARGIN_S = 0.5     # ... and this long before the next round's interruption
BACKCHANNEL_AFTER_USER_S = 0.3
FADE_S = 0.02                # the builder fades a cut response out over this long


class LayoutError(ValueError):
    """The dialogue cannot be laid out with these durations (one line)."""


@dataclass(frozen=True)
class Piece:
    key: str          # "opener", "r01.user", "r01.user.a"/"r01.user.b" (P), "r01.model", "r01.background";
                      # dialogue quality: "l00", "l01", "l01.bc0", ...
    voice: str        # the voice role: "user", "model" or "background"
    text: str         # the script text
    spoken: str       # the text sent to the TTS engine


@dataclass(frozen=True)
class Placement:
    key: str
    role: str         # "user", "assistant" or "background"
    voice: str
    text: str
    start_n: int
    end_n: int        # < start_n + length_n when an interruption cut the line
    length_n: int     # the piece's full length in samples
    sample_rate: int
    round: int = 0    # the round it belongs to (0: the opener; dialogue quality: 0)
    backchannel: bool = False

    @property
    def channel(self) -> str:
        return "model" if self.role == "assistant" else "user"

    @property
    def start(self) -> float:
        return sec(self.start_n, self.sample_rate)

    @property
    def end(self) -> float:
        return sec(self.end_n, self.sample_rate)

    @property
    def cut(self) -> bool:
        return self.end_n < self.start_n + self.length_n


@dataclass(frozen=True)
class Window:
    """One round sample's part of round.json (benchmarks/mtr/README.md, "Round sample files")."""
    round: int
    start_n: int
    end_n: int
    muted_n: list            # [[a, b]] sample spans
    encoding: dict
    history: list
    user_lines: list
    sample_rate: int

    def fields(self) -> dict:
        sr = self.sample_rate
        return {"start_s": sec(self.start_n, sr), "end_s": sec(self.end_n, sr),
                "muted": [[sec(a, sr), sec(b, sr)] for a, b in self.muted_n],
                "encoding": self.encoding, "history": self.history, "user_lines": self.user_lines}


@dataclass(frozen=True)
class Layout:
    sample_rate: int
    end_n: int                                   # the dialogue's length in samples
    placements: list                             # [Placement], sorted by (start, key)
    windows: list = field(default_factory=list)  # [Window], one per round (none for dialogue quality)

    @property
    def duration_s(self) -> float:
        return sec(self.end_n, self.sample_rate)


def sec(n: int, sr: int) -> float:
    return round(n / sr, 6)


def _spoken(text: str, before_pause: bool) -> str:
    """A piece that breaks off before a pause without punctuation gets a comma, so the engine
    speaks it with continuing intonation (as compose.spoken_form does for fdb-mini)."""
    return f"{text}," if before_pause and text[-1].isalnum() else text


def split_pause(user: str, after_word: int) -> tuple[str, str]:
    words = user.split()
    return " ".join(words[:after_word]), " ".join(words[after_word:])


def pieces(dialogue: dict) -> list[Piece]:
    """Every piece of audio a dialogue needs, in script order."""
    if "lines" in dialogue:
        out = []
        for i, line in enumerate(dialogue["lines"]):
            voice = "user" if line["role"] == "user" else "model"
            out.append(Piece(f"l{i:02d}", voice, line["text"], line["text"]))
            for j, bc in enumerate(line.get("backchannels", ())):
                out.append(Piece(f"l{i:02d}.bc{j}", "user", bc["text"], bc["text"]))
        return out
    out = [Piece("opener", "model", dialogue["opener"], dialogue["opener"])]
    for k, r in enumerate(dialogue["rounds"], 1):
        rk = f"r{k:02d}"
        if "pause" in r:
            a, b = split_pause(r["user"], r["pause"]["after_word"])
            out += [Piece(f"{rk}.user.a", "user", a, _spoken(a, True)), Piece(f"{rk}.user.b", "user", b, b)]
        else:
            out.append(Piece(f"{rk}.user", "user", r["user"], r["user"]))
        out.append(Piece(f"{rk}.model", "model", r["response"], r["response"]))
        if "background" in r:
            bg = r["background"]["text"]
            out.append(Piece(f"{rk}.background", "background", bg, bg))
    return out


def layout(dialogue: dict, durations_s: Mapping[str, float], sample_rate: int = 16000) -> Layout:
    """Where every piece of the dialogue goes (see the module docstring)."""
    ps = pieces(dialogue)
    lengths = {}
    for p in ps:
        d = durations_s.get(p.key)
        if not isinstance(d, (int, float)) or isinstance(d, bool) or not math.isfinite(d) or d <= 0:
            raise LayoutError(f"piece {p.key}: duration must be a number of seconds > 0, got {d!r}")
        lengths[p.key] = max(1, int(round(d * sample_rate)))
    if "lines" in dialogue:
        return _layout_dq(dialogue, ps, lengths, sample_rate)
    return _layout_rounds(dialogue, ps, lengths, sample_rate)


def _n(seconds: float, sr: int) -> int:
    return int(round(seconds * sr))


def _frac(fraction: float, n: int) -> int:
    return int(math.floor(fraction * n + 0.5))


def _layout_rounds(dialogue: dict, ps: list[Piece], n: dict, sr: int) -> Layout:
    text = {p.key: p.text for p in ps}
    place: dict[str, list] = {}   # key -> [start, end, round, role, voice]
    t = _n(LEAD_S, sr)
    place["opener"] = [t, t + n["opener"], 0, "assistant", "model"]
    prev = "opener"
    turns = []                    # per round: (start, end, [piece keys])
    for k, r in enumerate(dialogue["rounds"], 1):
        rk = f"r{k:02d}"
        p_start, p_end = place[prev][0], place[prev][1]
        if r["features"][0] == "I":
            cs = p_start + _frac(r["interrupt_at"], n[prev])
        else:
            cs = p_end + _n(r["gap_s"], sr)
        keys = [f"{rk}.user.a", f"{rk}.user.b"] if "pause" in r else [f"{rk}.user"]
        pos = cs
        for i, key in enumerate(keys):
            if i:
                pos += _n(r["pause"]["length_s"], sr)
            place[key] = [pos, pos + n[key], k, "user", "user"]
            pos += n[key]
        ue = pos
        turns.append((cs, ue, keys))
        if r["features"][0] == "I":   # the interrupted response stops CUT_AFTER_S after C_k starts
            place[prev][1] = min(p_end, cs + _n(CUT_AFTER_S, sr))
        ms = max(ue + _n(r["reply_gap_s"], sr), place[prev][1])
        place[f"{rk}.model"] = [ms, ms + n[f"{rk}.model"], k, "assistant", "model"]
        prev = f"{rk}.model"
    end = place[prev][1] + _n(TAIL_S, sr)
    rounds = dialogue["rounds"]
    for k, r in enumerate(rounds, 1):   # background lines, now that every cut is known
        if "background" not in r:
            continue
        rk = f"r{k:02d}"
        ms, me = place[f"{rk}.model"][:2]
        full = n[f"{rk}.model"]
        limit = me - _n(BG_END_MARGIN_S, sr)
        if k < len(rounds) and rounds[k]["features"][0] == "I":
            limit = min(limit, turns[k][0] - _n(INTERRUPT_MARGIN_S, sr))
        d = n[f"{rk}.background"]
        # at `at`, earlier to end by `limit`; not before 1/4 of the response unless the line is
        # too long to start there, then as late as it fits, never before the response starts
        bs = min(ms + _frac(r["background"]["at"], full), limit - d)
        if bs < ms:
            raise LayoutError(f"round {k}: the background line ({d / sr:.2f} s) does not fit inside the "
                              f"response ({full / sr:.2f} s) before {(limit - ms) / sr:.2f} s of it")
        place[f"{rk}.background"] = [bs, bs + d, k, "background", "background"]
    placements = sorted((Placement(key, v[3], v[4], text[key], v[0], v[1], n[key], sr, v[2])
                         for key, v in place.items()), key=lambda p: (p.start_n, p.key))
    _check_channels(placements)
    by_key = {p.key: p for p in placements}
    windows = []
    for k, r in enumerate(rounds, 1):
        cs, ue, keys = turns[k - 1]
        w_end = turns[k][1] if k < len(rounds) else end
        muted = [[turns[k][0], turns[k][1]]] if k < len(rounds) else []
        history = _history(placements, turns, rounds, cs, sr)
        user_lines = [{"start": by_key[key].start, "end": by_key[key].end, "text": by_key[key].text}
                      for key in keys]
        windows.append(Window(k, cs, w_end, muted, _encoding(k, r, by_key, cs, ue, sr),
                              history, user_lines, sr))
    return Layout(sr, end, placements, windows)


def _history(placements: list[Placement], turns: list, rounds: list, before: int, sr: int) -> list:
    """Every GT line that starts before `before`: the opener, whole user turns, responses."""
    lines = []
    for p in placements:
        if p.role == "assistant" and p.start_n < before:
            lines.append((p.start_n, 1, {"role": "assistant", "start": p.start, "end": p.end, "text": p.text}))
    for (cs, ue, _), r in zip(turns, rounds):
        if cs < before:
            lines.append((cs, 0, {"role": "user", "start": sec(cs, sr), "end": sec(ue, sr), "text": r["user"]}))
    return [x[2] for x in sorted(lines, key=lambda x: (x[0], x[1]))]


SCENARIO = {"S": "smooth-turntaking", "I": "interruption", "P": "pause-handling", "B": "background"}


def _encoding(k: int, r: dict, by_key: dict, cs: int, ue: int, sr: int) -> dict:
    feats = r["features"]
    rk = f"r{k:02d}"
    m = by_key[f"{rk}.model"]
    ts = {"user_start": sec(cs, sr), "user_end": sec(ue, sr), "model_start": m.start, "model_end": m.end}
    if feats[0] == "I":
        ts |= {"interruption_start": sec(cs, sr), "interruption_end": sec(ue, sr)}
    if "P" in feats:
        ts |= {"pause_start": by_key[f"{rk}.user.a"].end, "pause_end": by_key[f"{rk}.user.b"].start}
    if "B" in feats:
        b = by_key[f"{rk}.background"]
        ts |= {"background_start": b.start, "background_end": b.end}
    return {"round": k, "scenario": "_".join(SCENARIO[f] for f in feats), "features": list(feats),
            "timestamps": ts}


def _layout_dq(dialogue: dict, ps: list[Piece], n: dict, sr: int) -> Layout:
    text = {p.key: p.text for p in ps}
    placements: list[Placement] = []
    prev_start, prev_end, user_end = -1, 0, 0
    for i, line in enumerate(dialogue["lines"]):
        key = f"l{i:02d}"
        start = prev_end + _n(line["gap_s"], sr)
        if start <= prev_start or start < 0:
            raise LayoutError(f"lines[{i}]: starts {(prev_start - start) / sr:.2f} s before the previous "
                              "line does (its negative gap_s is longer than that line)")
        end = start + n[key]
        role = line["role"]
        placements.append(Placement(key, role, "user" if role == "user" else "model", text[key],
                                    start, end, n[key], sr))
        if role == "user":
            user_end = end
        for j, bc in enumerate(line.get("backchannels", ())):
            bk = f"{key}.bc{j}"
            d = n[bk]
            bs = min(start + _frac(bc["at"], n[key]), end - _n(BG_END_MARGIN_S, sr) - d)
            bs = max(bs, user_end + _n(BACKCHANNEL_AFTER_USER_S, sr))
            if bs < start or bs + d > end - _n(BG_END_MARGIN_S, sr):
                raise LayoutError(f"lines[{i}].backchannels[{j}]: the backchannel ({d / sr:.2f} s) does not "
                                  f"fit inside its assistant line ({n[key] / sr:.2f} s)")
            placements.append(Placement(bk, "user", "user", text[bk], bs, bs + d, d, sr, backchannel=True))
            user_end = bs + d
        prev_start, prev_end = start, end
    placements.sort(key=lambda p: (p.start_n, p.key))
    _check_channels(placements)
    return Layout(sr, max(p.end_n for p in placements) + _n(TAIL_S, sr), placements)


def _check_channels(placements: list[Placement]) -> None:
    """No two lines of one channel overlap (a broken layout is a LayoutError, never mixed audio)."""
    for channel in ("user", "model"):
        last = None   # the line of this channel that ends last so far
        for p in placements:
            if p.channel != channel:
                continue
            if last is not None and p.start_n < last.end_n:
                raise LayoutError(f"{p.key} starts at {p.start:.3f} s, before {last.key} ends at "
                                  f"{last.end:.3f} s (the same channel)")
            if last is None or p.end_n > last.end_n:
                last = p
