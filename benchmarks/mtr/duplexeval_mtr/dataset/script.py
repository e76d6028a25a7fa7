"""The MTR-DuplexBench script format "mtr-script/1": one JSON file per subset (benchmarks/mtr/README.md).

A script holds every text and every random draw of its dialogues, so building a dialogue is a
pure function of the script and the TTS (components/tts-synth/README.md, "MTR datasets"):

    {"format": "mtr-script/1", "subset": "mix_si_features", "set": "S+I", "seed": 7,
     "voices": {"user": {...}, "model": {...}, "background": {...}}, "background_gain_db": -10,
     "dialogues": [{"id": "si-000", "opener": "Hi, what can I do for you today?",
                    "rounds": [{"features": ["S"], "user": "...", "response": "...",
                                "gap_s": 0.6, "reply_gap_s": 0.5}, ...]}]}

Round keys: `features` (["S"|"I", "P"?, "B"?], or ["P"] / ["B"] alone), `user`, `response`,
`reply_gap_s` (silence from the user turn's end to the response), `gap_s` (silence from the
previous model line's end to the user turn; not in I rounds), `interrupt_at` (I rounds: where the
user cuts in, as a fraction in [0.25, 0.5] of the previous response), `pause` (P rounds:
{"after_word": n, "length_s": s}: a silence of s in [1.2, 2.0] after the n-th word of `user`),
`background` (B rounds: {"text", "at"}: another voice starting at fraction `at` in [0.25, 0.5] of
the response). Dialogue quality: {"id", "lines": [{"role": "user"|"assistant", "text", "gap_s",
"backchannels": [{"text", "at"}]}]}, lines alternating from the user; `gap_s` is the silence
before a line (from the dialogue start for the first), negative for an assistant line that starts
before the user ends; backchannels are user lines during an assistant line.

File-level problems stop the stage with one line; a bad dialogue fails only its own samples when
`parse_dialogue` is called for it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from duplexeval_common import dataset_scripts as ds
from duplexeval_common.errors import DuplexEvalError
from duplexeval_common.hashing import sha256_file
from duplexeval_common.jsonio import read_json_object
from duplexeval_common.samples import name_problem

from ..tasks import TASKS, task_of

FORMAT = "mtr-script/1"
TOP_KEYS = {"format", "subset", "task", "set", "seed", "voices", "background_gain_db", "note", "dialogues"}
ROLES = ("user", "model", "background")
DEFAULT_VOICES = {"user": {"engine": "piper", "voice": "joe", "rate": 1.0},
                  "model": {"engine": "flite", "voice": "slt", "rate": 1.0},
                  "background": {"engine": "flite", "voice": "kal", "rate": 1.0}}
DEFAULT_BACKGROUND_GAIN_DB = -10.0

# The contract's subsets and their sets (benchmarks/mtr/README.md); another `<name>_<task>` subset names its set.
SUBSET_SETS = {
    "smooth_features": "smooth", "interruption_features": "interruption", "pause_features": "pause",
    "background_features": "background", "mix_s_features": "S", "mix_si_features": "S+I",
    "mix_sip_features": "S+I+P", "mix_sipb_features": "S+I+P+B",
    "smooth_instruction_following": "smooth", "interruption_instruction_following": "interruption",
    "smooth_safety": "smooth", "interruption_safety": "interruption",
    "synthetic_dialogue_quality": None,
}
FEATURE_SETS = ("smooth", "interruption", "pause", "background", "S", "S+I", "S+I+P", "S+I+P+B")
JUDGED_SETS = ("smooth", "interruption")

# Ranges of the draws (the contract's, and the generator's).
INTERRUPT_AT = (0.25, 0.5)
BACKGROUND_AT = (0.25, 0.5)
PAUSE_S = (1.2, 2.0)
MAX_GAP_S = 5.0
DQ_OVERLAP_S = 0.5          # an assistant line may start at most this long before the user ends
BACKCHANNEL_AT = (0.1, 0.9)
MAX_ROUNDS = 50


@dataclass(frozen=True)
class MtrScript:
    subset: str
    task: str
    set: str | None
    path: Path
    sha256: str
    dialogues: list            # the raw entries; parse_dialogue checks one
    voices: dict               # role -> {"engine", "voice", "rate"}
    background_gain_db: float
    seed: int


def is_mtr_file(path: Path) -> bool:
    """Whether a script file declares format mtr-script/1 (without validating the rest)."""
    try:
        doc = read_json_object(path, f"script {Path(path).name}")
    except DuplexEvalError:
        return False
    return doc.get("format") == FORMAT


def load(path: Path, parse_specs: Callable) -> MtrScript:
    """One script file; a file-level problem is one DuplexEvalError line naming the file.
    parse_specs checks a voice spec (tts-synth's, which knows the engines)."""
    path = Path(path)
    where = f"script {path.name}"
    doc = read_json_object(path, where)
    ds.check_format(where, doc, FORMAT)
    ds.check_keys(where, doc, TOP_KEYS)
    subset = ds.subset_of(where, doc, path)
    problem = name_problem(subset)
    if problem:
        raise DuplexEvalError(f"{where}: subset name {problem}")
    task = doc.get("task") or task_of(subset)   # the script's own, else its subset name's
    if task not in TASKS:
        raise DuplexEvalError(f"{where}: task {task!r} is not an MTR task (one of {', '.join(TASKS)}; a script "
                              "without `task` takes it from its subset name's ending: _features, "
                              "_instruction_following, _safety or _dialogue_quality)")
    set_ = _set_of(where, subset, task, doc)
    voices = parse_voices(f"{where} voices", doc.get("voices", {}), parse_specs)
    gain = doc.get("background_gain_db", DEFAULT_BACKGROUND_GAIN_DB)
    if not ds.is_number(gain) or not -40 <= gain <= 0:
        raise DuplexEvalError(f"{where}: background_gain_db must be a number of dB in [-40, 0]")
    seed = ds.seed_of(where, doc)
    dialogues = doc.get("dialogues")
    if not isinstance(dialogues, list) or not dialogues:
        raise DuplexEvalError(f"{where}: 'dialogues' must be a non-empty list")
    seen: dict[str, int] = {}
    for i, d in enumerate(dialogues):
        did = raw_id(d, i)
        if did in seen:
            raise DuplexEvalError(f"{where}: dialogues {seen[did]} and {i} have the same id {did!r}")
        seen[did] = i
    return MtrScript(subset, task, set_, path, sha256_file(path), dialogues, voices, float(gain), seed)


def _set_of(where: str, subset: str, task: str, doc: dict) -> str | None:
    known = SUBSET_SETS.get(subset, "?")
    if task == "dialogue_quality":
        if doc.get("set") is not None:
            raise DuplexEvalError(f"{where}: a dialogue_quality script has no set (null)")
        return None
    allowed = FEATURE_SETS if task == "features" else JUDGED_SETS
    value = doc.get("set", None if known == "?" else known)
    if value not in allowed:
        raise DuplexEvalError(f"{where}: set must be one of {', '.join(allowed)} for {task}, got {value!r}")
    if known != "?" and value != known:
        raise DuplexEvalError(f"{where}: subset {subset} holds set {known!r}, not {value!r}")
    return value


def parse_voices(where: str, value: Any, parse_specs: Callable) -> dict:
    """{role: {"engine", "voice", "rate"}} with the defaults for the roles it leaves out."""
    if not isinstance(value, dict) or set(value) - set(ROLES):
        raise DuplexEvalError(f"{where}: expected an object {{user|model|background: {{engine, voice, rate}}}}")
    out = {r: dict(v) for r, v in DEFAULT_VOICES.items()}
    for role, spec in value.items():
        if isinstance(spec, dict) and "weight" in spec:
            raise DuplexEvalError(f"{where}.{role}: a role has one voice (no weight)")
        s = parse_specs(f"{where}.{role}", [spec])[0]
        out[role] = {"engine": s["engine"], "voice": s["voice"], "rate": s["rate"]}
    return out


def raw_id(entry: Any, index: int) -> str:
    """The dialogue's id, or `dialogue<index>` when the entry has no usable one (its samples then
    fail with the entry's problem)."""
    did = entry.get("id") if isinstance(entry, dict) else None
    return did if isinstance(did, str) and name_problem(did) is None else f"dialogue{index}"


def raw_rounds(entry: Any) -> int:
    """How many round samples a (possibly malformed) entry lists: its rounds, at least 1."""
    rounds = entry.get("rounds") if isinstance(entry, dict) else None
    return max(1, min(len(rounds), MAX_ROUNDS)) if isinstance(rounds, list) else 1


# -- one dialogue -------------------------------------------------------------------------------

def _text(obj: dict, key: str, where: str) -> str:
    v = obj.get(key)
    if not isinstance(v, str) or not v.strip():
        raise ValueError(f"{where}{key} must be non-empty text")
    return " ".join(v.split())


def _in(obj: dict, key: str, low: float, high: float, where: str, low_open: bool = False) -> float:
    v = obj.get(key)
    if not ds.in_range(v, low, high, low_open):
        raise ValueError(f"{where}{key} must be a number in {ds.range_text(low, high, low_open)}, got {v!r}")
    return float(v)


def _keys(obj: Any, required: set, optional: set, where: str) -> dict:
    if not isinstance(obj, dict):
        raise ValueError(f"{where}expected an object, got {type(obj).__name__}")
    problems = ds.key_problems(required, optional, obj)
    if problems:
        raise ValueError(where + problems)
    return obj


def parse_dialogue(script: MtrScript, entry: Any) -> dict:
    """A validated copy of one dialogue; ValueError with a one-line reason."""
    if script.task == "dialogue_quality":
        return _parse_dq(entry)
    d = _keys(entry, {"id", "opener", "rounds"}, {"note"}, "")
    did = d["id"]
    if not isinstance(did, str) or name_problem(did):
        raise ValueError(f"id must be a plain name, got {did!r}")
    rounds = d["rounds"]
    if not isinstance(rounds, list) or not 1 <= len(rounds) <= MAX_ROUNDS:
        raise ValueError(f"rounds must be a list of 1..{MAX_ROUNDS} rounds")
    out = [_parse_round(r, k) for k, r in enumerate(rounds, 1)]
    check_set(script.set, [r["features"] for r in out])
    return {"id": did, "opener": _text(d, "opener", ""), "rounds": out}


def _parse_round(r: Any, k: int) -> dict:
    at = f"round {k}: "
    if not isinstance(r, dict) or not isinstance(r.get("features"), list):
        raise ValueError(f"{at}expected an object with a features list")
    feats = r["features"]
    if feats not in (["P"], ["B"]) and not (
            len(feats) >= 1 and feats[0] in ("S", "I") and feats[1:] in ([], ["P"], ["B"], ["P", "B"])):
        raise ValueError(f"{at}features must be [S|I, P?, B?] in that order, or [P] or [B] alone; got {feats!r}")
    interrupt = feats[0] == "I"
    required = {"features", "user", "response", "reply_gap_s"}
    required |= {"interrupt_at"} if interrupt else {"gap_s"}
    required |= {"pause"} if "P" in feats else set()
    required |= {"background"} if "B" in feats else set()
    _keys(r, required, {"note"}, at)
    out: dict = {"features": list(feats), "user": _text(r, "user", at), "response": _text(r, "response", at),
                 "reply_gap_s": _in(r, "reply_gap_s", 0.0, MAX_GAP_S, at, low_open=True)}
    if interrupt:
        out["interrupt_at"] = _in(r, "interrupt_at", *INTERRUPT_AT, at)
    else:
        out["gap_s"] = _in(r, "gap_s", 0.0, MAX_GAP_S, at, low_open=True)
    if "P" in feats:
        p = _keys(r["pause"], {"after_word", "length_s"}, set(), f"{at}pause: ")
        words = out["user"].split()
        n = p["after_word"]
        if not isinstance(n, int) or isinstance(n, bool) or not 1 <= n < len(words):
            raise ValueError(f"{at}pause.after_word must be a word position in [1, {len(words) - 1}] "
                             f"(the user turn has {len(words)} words), got {n!r}")
        out["pause"] = {"after_word": n, "length_s": _in(p, "length_s", *PAUSE_S, f"{at}pause.")}
    if "B" in feats:
        b = _keys(r["background"], {"text", "at"}, set(), f"{at}background: ")
        out["background"] = {"text": _text(b, "text", f"{at}background."),
                             "at": _in(b, "at", *BACKGROUND_AT, f"{at}background.")}
    return out


def check_set(set_: str | None, features: list[list[str]]) -> None:
    """The rounds' features agree with the dialogue set (benchmarks/mtr/README.md, "Sets"); ValueError."""
    single = {"smooth": ["S"], "interruption": ["I"], "pause": ["P"], "background": ["B"], "S": ["S"]}
    if set_ in single:
        for k, f in enumerate(features, 1):
            if f != single[set_]:
                raise ValueError(f"round {k}: set {set_} has features {single[set_]} in every round, got {f}")
        return
    need = {"S+I": ("I",), "S+I+P": ("I", "P"), "S+I+P+B": ("I", "P", "B")}[set_]
    if len(features) % 2:
        raise ValueError(f"set {set_} needs an even number of rounds (pairs 1-2, 3-4, ...)")
    for k, f in enumerate(features, 1):
        if f[0] not in ("S", "I") or (set(f) - {"S", "I"}) - set(need):
            raise ValueError(f"round {k}: set {set_} allows features from {['S', *need]}, got {f}")
    for a in range(0, len(features), 2):
        pair = features[a:a + 2]
        for feat in need:
            if sum(feat in f for f in pair) != 1:
                raise ValueError(f"rounds {a + 1}-{a + 2}: set {set_} has exactly one {feat} round per pair")


def _parse_dq(entry: Any) -> dict:
    d = _keys(entry, {"id", "lines"}, {"note"}, "")
    did = d["id"]
    if not isinstance(did, str) or name_problem(did):
        raise ValueError(f"id must be a plain name, got {did!r}")
    lines = d["lines"]
    if not isinstance(lines, list) or len(lines) < 2:
        raise ValueError("lines must be a list of at least 2 lines (a user turn, then an assistant turn, ...)")
    out = []
    for i, line in enumerate(lines):
        at = f"lines[{i}]: "
        role = "user" if i % 2 == 0 else "assistant"
        line = _keys(line, {"role", "text", "gap_s"}, {"backchannels", "note"}, at)
        if line["role"] != role:
            raise ValueError(f"{at}role must be {role!r} (lines alternate, starting with the user)")
        low = -DQ_OVERLAP_S if role == "assistant" and i else 0.0
        item = {"role": role, "text": _text(line, "text", at), "gap_s": _in(line, "gap_s", low, MAX_GAP_S, at)}
        if i == 0 and item["gap_s"] <= 0:
            raise ValueError(f"{at}gap_s (the lead silence of the first line) must be > 0")
        if "backchannels" in line:
            if role != "assistant" or not isinstance(line["backchannels"], list):
                raise ValueError(f"{at}backchannels must be a list, on assistant lines only")
            bcs = []
            for j, bc in enumerate(line["backchannels"]):
                w = f"{at}backchannels[{j}]: "
                bc = _keys(bc, {"text", "at"}, set(), w)
                bcs.append({"text": _text(bc, "text", w), "at": _in(bc, "at", *BACKCHANNEL_AT, w)})
            if [b["at"] for b in bcs] != sorted(b["at"] for b in bcs):
                raise ValueError(f"{at}backchannels must be in order of `at`")
            item["backchannels"] = bcs
        out.append(item)
    return {"id": did, "lines": out}
