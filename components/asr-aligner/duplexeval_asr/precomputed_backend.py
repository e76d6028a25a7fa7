"""Transcripts that came with imported data, passed through unchanged.

A sample whose inputs already hold word timestamps (our `transcript.json`, or the official
`output.json`, e.g. from a run of the official asr.py) keeps them: nothing is transcribed.
transcript.json is preferred (it says which ASR made it); its words, times and the provenance
it records are copied. An official output.json is read as the official code reads it:
chunk timestamps are already in output.wav time (the user_interruption crop already added
back), and a null end is kept.
"""

from __future__ import annotations

from duplexeval_common.errors import DuplexEvalError, SampleError
from duplexeval_common.hashing import sha256_file
from duplexeval_common.settings import Setting, Spec

from .backends import Word


class Precomputed:
    name = "precomputed"
    from_inputs = True  # align.py asks it for the sample's words instead of passing audio
    SETTINGS = Spec(Setting("prefer", str, "transcript.json", "the file read first when a sample has both",
                            choices=("transcript.json", "output.json")))

    def __init__(self, prefer: str = "transcript.json"):
        if prefer not in ("transcript.json", "output.json"):
            raise DuplexEvalError("precomputed: prefer must be transcript.json or output.json")
        self.model = "precomputed (imported word timestamps)"
        self.model_sha256 = ""
        self.settings = {"prefer": prefer, "language": None}

    def words_for(self, ctx, target=None) -> tuple[list[Word], dict]:
        """(words in the target audio's time, provenance) from the sample's inputs: the target's
        transcript or official file (default: transcript.json, output.json)."""
        transcript = target.transcript if target is not None else "transcript.json"
        official = target.official if target is not None else "output.json"
        prefer = transcript if self.settings["prefer"] == "transcript.json" else official
        order = [prefer] + [n for n in (transcript, official) if n != prefer]
        for name in order:
            if not ctx.has_input(name):
                continue
            if name == transcript:
                t = ctx.read_json(name, "transcript")
                words = [Word(w["text"], float(w["start"]), None if w["end"] is None else float(w["end"]),
                              w.get("probability")) for w in t["words"]]
                prov = {k: t.get(k) for k in ("backend", "model", "model_sha256", "settings", "offset_s")}
            else:
                o = ctx.read_json(name, "output")
                words = [Word(c["text"], float(c["timestamp"][0]),
                              None if c["timestamp"][1] is None else float(c["timestamp"][1]), None)
                         for c in o["chunks"]]
                prov = {}
            prov["file"] = name
            prov["sha256"] = sha256_file(ctx.input_path(name))
            return words, prov
        raise SampleError(ctx.id, f"precomputed ASR: the inputs hold neither {transcript} nor {official}")
