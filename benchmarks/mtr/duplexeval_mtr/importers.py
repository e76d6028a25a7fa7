"""Importer of the MTR-DuplexBench release (Hugging Face dataset Jeff0918/MTR-DuplexBench).

`duplexeval import mtr DIR` reads the release's `data/` folder (DIR is `data/` or the folder
holding it), never writes to it, and writes <home>/datasets/<name>/ in the MTR contract
(benchmarks/mtr/README.md, docs/datasets.md "Importing MTR-DuplexBench"):

- features, instruction following and safety: one ROUND SAMPLE per round,
  `<subset>/<dialogue_id>-r<kk>/` with input.wav, history.wav and round.json;
- dialogue quality: one DIALOGUE sample per Candor recording, `candor_dialogue_quality/<id>/`
  with dialogue.wav (16 kHz stereo) and dialogue.json (no lines: the release ships no GT text),
  which the MTR pipeline's segmentation turns into rounds;

and manifest.json (the orchestrator's import manifest, each row with its files' sha256, its task,
`kind` "round" or "dialogue" and `group`, its dialogue). The release
does not document its encoding files; the reading below is an assumption, stated in the docs:
each scenario_encoding_*.json is a list of rows {"dialogue_id", "round_num", "scenario",
"timestamp": {...}} (or {"<dialogue_id>": [rows]}), and a dialogue's audio is the .wav whose stem
is its dialogue_id (mono: the user channel only; stereo: left user, right the GT model).

A dialogue that fails a check is left out whole, reported as one line `<subset>/<dialogue_id>:
<problem>` and listed in the manifest's `excluded`; the others are imported. The folder is built
under a hidden temporary name and renamed into place when complete.
"""

from __future__ import annotations

import io
import math
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from duplexeval_common.benchmarks import Importer
from duplexeval_common.errors import DuplexEvalError, InputError
from duplexeval_common.import_checks import Excluded, check_wav, strict_json, within
from duplexeval_common.samples import id_sort_key, name_problem, printable

from .schemas import SCHEMAS

NAME = "mtr"



SR = 16000
ENC = "Scenarios_encoding"
FEATURES_AUDIO = "Conversational_Features/original"
# (encoding file under data/Scenarios_encoding, subset, task, set, audio folder under data/)
ROUND_SOURCES = (
    ("single_scenario/scenario_encoding_smooth.json", "smooth_features", "features", "smooth", FEATURES_AUDIO),
    ("single_scenario/scenario_encoding_interruption.json", "interruption_features", "features", "interruption",
     FEATURES_AUDIO),
    ("single_scenario/scenario_encoding_pause.json", "pause_features", "features", "pause", FEATURES_AUDIO),
    ("single_scenario/scenario_encoding_background.json", "background_features", "features", "background",
     FEATURES_AUDIO),
    ("multi_scenarios/scenario_encoding_1.json", "mix_s_features", "features", "S", FEATURES_AUDIO),
    ("multi_scenarios/scenario_encoding_2.json", "mix_si_features", "features", "S+I", FEATURES_AUDIO),
    ("multi_scenarios/scenario_encoding_3.json", "mix_sip_features", "features", "S+I+P", FEATURES_AUDIO),
    ("multi_scenarios/scenario_encoding_4.json", "mix_sipb_features", "features", "S+I+P+B", FEATURES_AUDIO),
    ("instruction_following/scenario_encoding_smooth.json", "smooth_instruction_following",
     "instruction_following", "smooth", "Instruction_Following/audios"),
    ("instruction_following/scenario_encoding_interruption.json", "interruption_instruction_following",
     "instruction_following", "interruption", "Instruction_Following/audios"),
    ("safety/scenario_encoding_smooth.json", "smooth_safety", "safety", "smooth", "Safety/audios"),
    ("safety/scenario_encoding_interruption.json", "interruption_safety", "safety", "interruption",
     "Safety/audios"),
)
TEXTS = {"instruction_following": "Instruction_Following/instruction_following_data.json",
         "safety": "Safety/safety_data.json"}
DQ_AUDIO, DQ_SUBSET = "Dialogue_Quality", "candor_dialogue_quality"
# Scenario words (the release's names and their short forms) -> feature.
SCENARIO_WORDS = {"smooth-turntaking": "S", "smooth": "S", "interruption": "I", "interrupt": "I",
                  "pause-handling": "P", "pause": "P", "background": "B"}
NAMES = {"S": "smooth-turntaking", "I": "interruption", "P": "pause-handling", "B": "background"}
TIMESTAMP_KEYS = ("user_start", "user_end", "model_start", "model_end", "interruption_start",
                  "interruption_end", "pause_start", "pause_end", "background_start", "background_end")
PAIRS = (("user_start", "user_end"), ("model_start", "model_end"), ("interruption_start", "interruption_end"),
         ("pause_start", "pause_end"), ("background_start", "background_end"))
TEXT_KEYS = ("question", "instruction", "user_text", "text", "query", "prompt")
EPS = 1e-6  # a time may exceed the audio end by this much (float noise), no more


def _t(x: float) -> float:
    return round(float(x), 6)


# ---- reading the release ---------------------------------------------------------------------

def release_data(given: Path) -> Path:
    """The release's data/ folder: `given` itself, given/data or given/<one folder>/data."""
    given = Path(given)
    if not given.is_dir():
        raise DuplexEvalError(f"{given}: no such folder")
    for d in (given, given / "data"):
        if (d / ENC).is_dir() or (d / DQ_AUDIO).is_dir():
            return d
    inner = [given / n / "data" for n in sorted(os.listdir(given)) if not n.startswith(".")
             and ((given / n / "data" / ENC).is_dir() or (given / n / "data" / DQ_AUDIO).is_dir())]
    if len(inner) == 1:
        return inner[0]
    if inner:
        raise DuplexEvalError(f"{given}: several folders hold a release ({', '.join(p.parent.name for p in inner)}); "
                              "name one of them")
    raise DuplexEvalError(f"{given}: no MTR-DuplexBench release here (expected data/{ENC}/ or "
                          f"data/{DQ_AUDIO}/ in it, or in a folder inside it)")


def encoding_rows(doc) -> list[tuple[int, dict | None, str | None]]:
    """(index, row, dialogue_id from a dict key) of an encoding file: a list of rows, or
    {"<dialogue_id>": [rows]}."""
    if isinstance(doc, list):
        return [(i, r if isinstance(r, dict) else None, None) for i, r in enumerate(doc)]
    if isinstance(doc, dict):
        out, i = [], 0
        for did, rows in doc.items():
            for r in rows if isinstance(rows, list) else [rows]:
                out.append((i, r if isinstance(r, dict) else None, did))
                i += 1
        return out
    raise Excluded("expected a list of rows or an object {\"<dialogue_id>\": [rows]}")


def _round_number(v) -> int | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    if isinstance(v, str) and v.strip().isascii() and v.strip().isdigit():
        return int(v.strip())
    return None


def question_texts(doc) -> dict[tuple[str, int], str]:
    """{(dialogue_id, round): question} from an *_data.json, for the shapes we can read: a list of
    {"dialogue_id", "round_num"|"round", <text key>} rows, or {"<dialogue_id>": [question strings
    or such rows, in round order]}; anything else gives no texts."""
    out: dict[tuple[str, int], str] = {}

    def text_of(r) -> str | None:
        if isinstance(r, str):
            return r
        if isinstance(r, dict):
            for k in TEXT_KEYS:
                if isinstance(r.get(k), str):
                    return r[k]
        return None

    if isinstance(doc, list):
        for r in doc:
            if isinstance(r, dict) and "dialogue_id" in r:
                n, text = _round_number(r.get("round_num", r.get("round"))), text_of(r)
                if n is not None and text is not None:
                    out[(str(r["dialogue_id"]), n)] = text
    elif isinstance(doc, dict):
        for did, rows in doc.items():
            for i, r in enumerate(rows if isinstance(rows, list) else []):
                n = _round_number(r.get("round_num", r.get("round"))) if isinstance(r, dict) else None
                text = text_of(r)
                if text is not None:
                    out[(str(did), n if n is not None else i + 1)] = text
    return {k: " ".join(v.split()) for k, v in out.items()}


def features(scenario, set_: str) -> list[str]:
    """The round's features (contract order) from its scenario name, checked against the set."""
    if not isinstance(scenario, str) or not scenario.strip():
        raise Excluded("scenario must be a non-empty string")
    words = [w for w in scenario.strip().lower().replace(" ", "_").split("_") if w]
    # "smooth_turntaking" is one name split in two
    found = set()
    for i, w in enumerate(words):
        if w == "turntaking" and i and words[i - 1] == "smooth":
            continue
        if w not in SCENARIO_WORDS:
            raise Excluded(f"unknown scenario name {w!r} in {scenario!r} (known: "
                           f"{', '.join(sorted(SCENARIO_WORDS))})")
        found.add(SCENARIO_WORDS[w])
    single = {"smooth": {"S"}, "interruption": {"I"}}
    if set_ in single:
        if found != single[set_]:
            raise Excluded(f"scenario {scenario!r} in the {set_} set (expected {NAMES[min(single[set_])]})")
        return sorted(found)
    if set_ in ("pause", "background"):
        f = "P" if set_ == "pause" else "B"
        if f not in found or found - {"S", f}:
            raise Excluded(f"scenario {scenario!r} in the {set_} set (expected {NAMES[f]})")
        return [f]
    allowed = {"S": set(), "S+I": {"I"}, "S+I+P": {"I", "P"}, "S+I+P+B": {"I", "P", "B"}}[set_] | {"S"}
    if found - allowed:
        raise Excluded(f"scenario {scenario!r} is not allowed in the {set_} set")
    if {"S", "I"} <= found:
        raise Excluded(f"scenario {scenario!r} names both smooth turn-taking and interruption")
    base = ["I"] if "I" in found else ["S"]  # smooth turn-taking unless the round interrupts
    return base + [f for f in ("P", "B") if f in found]


@dataclass
class Dialogue:
    subset: str
    id: str
    task: str
    set: str
    audio_dir: Path
    root: Path  # the release's data folder: no file of the dialogue may lead out of it
    rows: list = field(default_factory=list)  # (file index, row)
    problem: str | None = None

    @property
    def key(self) -> str:
        return f"{self.subset}/{printable(self.id)}"


def read_dialogues(data: Path, report) -> tuple[list[Dialogue], list[dict], dict]:
    """(dialogues, excluded entries for whole files, {relative path: sha256} of the encodings read)."""
    from duplexeval_common.hashing import sha256_file
    out, excluded, hashes = [], [], {}
    for rel, subset, task, set_, audio in ROUND_SOURCES:
        path = data / ENC / rel
        if not path.is_file():
            report(f"note: {subset}: {ENC}/{rel} is missing; not imported")
            continue
        try:
            within(data, path, f"{ENC}/{rel}")
            hashes[f"{ENC}/{rel}"] = sha256_file(path)
            rows = encoding_rows(strict_json(path))
        except Excluded as exc:
            excluded.append({"subset": subset, "id": "*", "reason": f"{ENC}/{rel}: {exc}"})
            report(f"{subset}/*: {ENC}/{rel}: {exc}")
            continue
        by_id: dict[str, Dialogue] = {}
        for i, row, key_id in rows:
            did = row.get("dialogue_id") if row is not None else None
            did = key_id if did is None else did
            if row is None or did is None or isinstance(did, (bool, dict, list)):
                why = "is not an object" if row is None else "has no dialogue_id"
                excluded.append({"subset": subset, "id": f"#{i}", "reason": f"{ENC}/{rel} row {i} {why}"})
                report(f"{subset}/#{i}: {ENC}/{rel} row {i} {why}")
                continue
            did = str(did)
            d = by_id.setdefault(did, Dialogue(subset, did, task, set_, data / audio, data))
            if key_id is not None and str(row.get("dialogue_id", key_id)) != key_id:
                d.problem = d.problem or f"row {i} has dialogue_id {row['dialogue_id']!r} under key {key_id!r}"
            d.rows.append((i, row))
        out += by_id.values()
    return out, excluded, hashes


# ---- audio -----------------------------------------------------------------------------------

def read_audio(path: Path, root: Path, stereo_only: bool = False) -> tuple[np.ndarray, int]:
    """(int16 [frames, channels] at 16 kHz, 16 kHz) of a dialogue's audio file, after the checks
    every importer applies (duplexeval_common.import_checks: no link out of `root`, the release's
    data folder; readable, finite, a rate and a length in bounds) and one or two channels."""
    import soundfile as sf
    from duplexeval_common.wavio import resample
    if not path.is_file():
        raise Excluded(f"{path.name} is missing")
    within(root, path, path.name)
    check_wav(path, mono=False, formats=("WAV", "WAVEX", "MP3"))
    try:
        info = sf.info(str(path))
        if info.samplerate == SR and info.subtype == "PCM_16":
            data = sf.read(str(path), dtype="int16", always_2d=True)[0]
        else:
            x = sf.read(str(path), dtype="float64", always_2d=True)[0]
            cols = [resample(x[:, c], info.samplerate, SR).astype(np.float64) for c in range(x.shape[1])]
            data = np.clip(np.round(np.stack(cols, axis=1) * 32768.0), -32768, 32767).astype(np.int16)
    except Exception as exc:  # soundfile raises several types for bad files
        msg = printable(str(exc).replace(str(path), path.name), 160)
        raise Excluded(f"{path.name} is not readable audio ({msg})") from None
    if data.shape[1] not in (1, 2) or (stereo_only and data.shape[1] != 2):
        want = "stereo (left user, right model)" if stereo_only else "mono (user) or stereo (left user, right model)"
        raise Excluded(f"{path.name} has {data.shape[1]} channels; expected {want}")
    return data, SR


def wav_bytes(pcm: np.ndarray) -> bytes:
    import soundfile as sf
    buf = io.BytesIO()
    sf.write(buf, pcm, SR, subtype="PCM_16", format="WAV")
    return buf.getvalue()


def check_mp3() -> None:
    import soundfile as sf
    if "MP3" not in sf.available_formats():
        raise DuplexEvalError(f"soundfile's libsndfile {sf.__libsndfile_version__} cannot decode MP3 (the "
                              "Dialogue_Quality recordings): it needs libsndfile >= 1.1; install soundfile>=0.12 "
                              "(it bundles one) or convert the .mp3 files to .wav first")


# ---- one dialogue -> round samples -----------------------------------------------------------

def _number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def dialogue_rounds(d: Dialogue, T: float, texts: dict) -> list[dict]:
    """The checked rounds of a dialogue: [{"k", "encoding", "turn": (start, end), "text"}]."""
    seen: dict[int, int] = {}
    rounds = []
    for i, row in d.rows:
        n = _round_number(row.get("round_num"))
        if n is None:
            raise Excluded(f"row {i} has no round_num (or it is not a whole number): {row.get('round_num')!r}")
        if n in seen:
            raise Excluded(f"round {n} is given twice (rows {seen[n]} and {i})")
        seen[n] = i
        fs = features(row.get("scenario"), d.set)
        if d.task != "features" and fs not in (["S"], ["I"]):
            raise Excluded(f"round {n}: a {d.task} round is smooth or interruption")
        raw = row.get("timestamp")
        if not isinstance(raw, dict):
            raise Excluded(f"round {n}: timestamp must be an object")
        ts = {}
        for k in TIMESTAMP_KEYS:
            if k in raw:
                if not _number(raw[k]):
                    raise Excluded(f"round {n}: {k} is not a number ({raw[k]!r})")
                if not -EPS <= raw[k] <= T + EPS:
                    raise Excluded(f"round {n}: {k} {raw[k]} s lies outside the audio [0, {T:.6f}]")
                ts[k] = _t(min(max(raw[k], 0.0), T))
        if "I" in fs:  # the user turn of an I round is the interruption (contract): both spellings
            for a, b in (("interruption_start", "user_start"), ("interruption_end", "user_end")):
                if a in ts or b in ts:
                    ts.setdefault(a, ts.get(b)), ts.setdefault(b, ts.get(a))
        if "P" not in fs or (ts.get("pause_start") == 0 and ts.get("pause_end") == 0):
            ts.pop("pause_start", None), ts.pop("pause_end", None)  # the release's 0.0 = no pause
        if "B" not in fs:
            ts.pop("background_start", None), ts.pop("background_end", None)
        for a, b in PAIRS:
            if (a in ts) != (b in ts):
                raise Excluded(f"round {n}: {a} and {b} come together (one is missing)")
            if a in ts and ts[b] < ts[a]:
                raise Excluded(f"round {n}: {b} ({ts[b]}) is before {a} ({ts[a]})")
        need = ["user_start"] + (["model_start"] if d.task == "features" else []) + \
               (["background_start"] if "B" in fs else [])
        for k in need:
            if k not in ts:
                raise Excluded(f"round {n}: {'+'.join(fs)} needs timestamps {k} and {k[:-5]}end")
        if "pause_start" in ts and not ts["user_start"] <= ts["pause_start"] <= ts["pause_end"] <= ts["user_end"]:
            raise Excluded(f"round {n}: the pause [{ts['pause_start']}, {ts['pause_end']}] is not inside the "
                           f"user turn [{ts['user_start']}, {ts['user_end']}]")
        enc = {"round": n, "scenario": "_".join(NAMES[f] for f in fs), "features": fs,
               "timestamps": dict(sorted(ts.items()))}
        rounds.append({"k": n, "encoding": enc, "turn": (ts["user_start"], ts["user_end"]),
                       "text": texts.get((d.id, n), "")})
    rounds.sort(key=lambda r: r["k"])
    if [r["k"] for r in rounds] != list(range(1, len(rounds) + 1)):
        raise Excluded(f"rounds are numbered {[r['k'] for r in rounds]}, not 1..{len(rounds)}")
    for a, b in zip(rounds, rounds[1:]):
        if b["turn"][0] < a["turn"][1]:
            raise Excluded(f"round {b['k']}'s user turn starts ({b['turn'][0]}) before round {a['k']}'s "
                           f"ends ({a['turn'][1]})")
    if rounds[-1]["turn"][0] >= T:
        raise Excluded(f"round {rounds[-1]['k']} starts at the audio end ({T:.6f} s)")
    return rounds


def _encoding_problem(d: Dialogue, rounds: list) -> str | None:
    """What the scorer (score/encodings.py) would refuse in this encoding, or None."""
    from .score.encodings import parse_encoding
    enc = {"dialogue_id": d.id, "task": d.task, "set": d.set, "rounds": [r["encoding"] for r in rounds]}
    msg = SCHEMAS.problem("encoding", enc)
    if msg:
        return msg
    try:
        parse_encoding(d.key, enc, d.id)
    except InputError as exc:
        return exc.problem
    return None


def user_lines(r: dict) -> list[dict]:
    """A round's user turn, split at its pause when it has one (the text on the first part)."""
    a, b = r["turn"]
    ts = r["encoding"]["timestamps"]
    if "pause_start" in ts and a < ts["pause_start"] and ts["pause_end"] < b:
        return [{"start": a, "end": ts["pause_start"], "text": r["text"]},
                {"start": ts["pause_end"], "end": b, "text": ""}]
    return [{"start": a, "end": b, "text": r["text"]}]


def round_docs(d: Dialogue, rounds: list, T: float) -> list[dict]:
    """round.json of every round (mtr-round/1)."""
    K = len(rounds)
    lines = []  # every GT line the encoding places: user turns and GT model responses (no text shipped)
    for r in rounds:
        lines += [{"role": "user", **ln} for ln in user_lines(r)]
        ts = r["encoding"]["timestamps"]
        if "model_start" in ts:
            lines.append({"role": "assistant", "start": ts["model_start"], "end": ts["model_end"], "text": ""})
    lines.sort(key=lambda ln: (ln["start"], ln["end"], ln["role"]))
    out = []
    for i, r in enumerate(rounds):
        start = r["turn"][0]
        nxt = rounds[i + 1] if i + 1 < K else None
        end = nxt["turn"][1] if nxt else _t(T)
        out.append({"format": "mtr-round/1", "dialogue_id": d.id, "round": r["k"], "rounds": K, "task": d.task,
                    "set": d.set, "start_s": start, "end_s": end,
                    "muted": [list(nxt["turn"])] if nxt else [], "encoding": r["encoding"],
                    "history": [ln for ln in lines if ln["start"] < start],
                    "user_lines": user_lines(r), "source": "script"})
    return out


def round_samples(d: Dialogue, texts: dict) -> list[tuple]:
    """Check one dialogue and make its round samples (nothing written yet): [(subset, id, task,
    {file: bytes}, duration_s, "round")]. Excluded on the first problem."""
    from duplexeval_common.jsonio import dumps
    if d.problem:
        raise Excluded(d.problem)
    if name_problem(d.id):
        raise Excluded(f"dialogue id {name_problem(d.id)}")
    if not 0 < len(d.rows) < 100:
        raise Excluded(f"{len(d.rows)} rounds (round sample ids have two digits: 1..99)")
    pcm, _ = read_audio(d.audio_dir / f"{d.id}.wav", d.root)
    T = pcm.shape[0] / SR
    rounds = dialogue_rounds(d, T, texts)
    problem_ = _encoding_problem(d, rounds)
    if problem_:
        raise Excluded(problem_)
    user = pcm[:, 0]
    model = pcm[:, 1] if pcm.shape[1] == 2 else np.zeros_like(user)
    rows = []
    for doc in round_docs(d, rounds, T):
        sid = f"{d.id}-r{doc['round']:02d}"
        if name_problem(sid):
            raise Excluded(f"round sample id {name_problem(sid)}")
        n_end, n_start = round(doc["end_s"] * SR), round(doc["start_s"] * SR)
        inp = np.zeros(n_end, np.int16)
        inp[:min(n_end, len(user))] = user[:n_end]
        for a, b in doc["muted"]:
            inp[round(a * SR):round(b * SR)] = 0
        hist = np.zeros(n_end, np.int16)
        hist[:n_start] = model[:n_start]
        files = {"input.wav": wav_bytes(inp), "history.wav": wav_bytes(hist), "round.json": dumps(doc).encode()}
        msg = SCHEMAS.problem("round-sample", doc)
        if msg:
            raise Excluded(f"round {doc['round']}: {msg}")
        rows.append((d.subset, sid, d.task, files, n_end / SR, "round"))
    return rows


def write_sample(work: Path, subset: str, sid: str, task: str, files: dict, duration: float, kind: str) -> dict:
    """Write one sample's files; its manifest row."""
    import hashlib
    folder = work / subset / sid
    folder.mkdir(parents=True)
    for n, data in files.items():
        (folder / n).write_bytes(data)
    group = sid.rsplit("-r", 1)[0] if kind == "round" else sid
    return {"subset": subset, "id": sid, "task": task, "kind": kind, "group": group, "duration_s": duration,
            "sample_rate": SR,
            "files": {n: hashlib.sha256(data).hexdigest() for n, data in sorted(files.items())}}


def dialogue_sample(path: Path, root: Path) -> tuple:
    """One Candor recording as a dialogue-quality dialogue sample."""
    from duplexeval_common.jsonio import dumps
    did = path.stem
    if name_problem(did):
        raise Excluded(f"dialogue id {name_problem(did)}")
    pcm, _ = read_audio(path, root, stereo_only=True)
    doc = {"format": "mtr-dialogue/1", "dialogue_id": did, "task": "dialogue_quality",
           "duration_s": _t(pcm.shape[0] / SR), "lines": []}
    return (DQ_SUBSET, did, "dialogue_quality",
            {"dialogue.wav": wav_bytes(pcm), "dialogue.json": dumps(doc).encode()}, pcm.shape[0] / SR, "dialogue")


# ---- the importer ----------------------------------------------------------------------------

def import_release(svc, directory: Path, name: str, home: Path | None = None, force: bool = False,
                   report=None):
    """Import the release (see the module docstring); svc: the orchestrator's import service."""
    from duplexeval_common.hashing import sha256_file
    report = report or svc.default_report
    svc.check_name(name)
    data = release_data(Path(directory))
    mp3s = sorted((data / DQ_AUDIO).glob("*.mp3")) if (data / DQ_AUDIO).is_dir() else []
    if mp3s:
        check_mp3()
    elif not (data / DQ_AUDIO).is_dir():
        report(f"note: {DQ_SUBSET}: {DQ_AUDIO}/ is missing; not imported")
    dialogues, excluded, hashes = read_dialogues(data, report)
    texts: dict[str, dict] = {}
    for task, rel in TEXTS.items():
        p = data / rel
        if any(d.task == task for d in dialogues):
            try:
                if p.is_file():
                    within(data, p, rel)
                texts[task] = question_texts(strict_json(p)) if p.is_file() else {}
                hashes[rel] = sha256_file(p) if p.is_file() else None
            except Excluded as exc:
                texts[task] = {}
                report(f"note: {rel}: {exc}; the {task} user lines have no text")
            if p.is_file() and not texts[task]:
                report(f"note: {rel} has no question texts in a shape read here; the {task} user lines "
                       "have no text")
    with svc.staging(name, data, home, force) as (work, commit):
        rows = []
        jobs = [(d.subset, d.id, lambda d=d: round_samples(d, texts.get(d.task, {})))
                for d in sorted(dialogues, key=lambda d: (d.subset, *id_sort_key(d.id)))]
        jobs += [(DQ_SUBSET, p.stem, lambda p=p: [dialogue_sample(p, data)]) for p in mp3s]
        folded: dict[tuple, list[str]] = {}
        for subset, did, _ in jobs:
            folded.setdefault((subset, did.casefold()), []).append(did)
        for subset, did, make in jobs:
            try:
                same = folded[(subset, did.casefold())]
                if len(same) > 1:
                    raise Excluded(f"duplicate dialogue id: {' and '.join(map(repr, same))} differ only in case "
                                   "(one folder on a case-insensitive file system); none is imported")
                rows += [write_sample(work, *s) for s in make()]  # all checked before any is written
            except Excluded as exc:
                excluded.append({"subset": subset, "id": printable(did), "reason": str(exc)})
                report(f"{subset}/{printable(did)}: {exc}")
        if not rows:
            raise DuplexEvalError(f"{data}: no dialogue passed the checks ({len(excluded)} excluded); nothing "
                                  "was written")
        manifest = svc.manifest(NAME, name, "mtr", data, rows, excluded,
                                release={"name": "huggingface.co/datasets/Jeff0918/MTR-DuplexBench",
                                         "files_sha256": dict(sorted(hashes.items()))})
        final = commit(manifest)
    return svc.Imported(name, final, manifest, excluded)


IMPORTERS = {
    "mtr": Importer("mtr", "The MTR-DuplexBench release (Hugging Face Jeff0918/MTR-DuplexBench): DIRECTORY is its "
                    "data/ folder or holds it. Writes round samples and dialogue samples (the benchmark's doc "
                    "page, \"Importing MTR-DuplexBench\").", import_release, default_name="mtr"),
}
