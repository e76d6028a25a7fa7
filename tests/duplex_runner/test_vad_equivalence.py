"""The runner's streaming endpointer gives silero-vad's own VADIterator events.

vad.SileroOnnx + vad.Endpointer drive the Silero ONNX model with numpy and
reimplement VADIterator's state machine. The same 16 kHz audio goes chunk by
chunk (512 samples) through both, and the start/end events must be the same
samples. VADIterator reports samples (`{'start': n}` / `{'end': n}`); an
Endpointer event reports seconds, `at * 16000` of them.
"""

from __future__ import annotations

import numpy as np
import pytest

from duplexeval_runner_controls import vad

from .conftest import zeros

SR = vad.SR

# (threshold, min_silence_ms, speech_pad_ms); the pads are whole samples at 16 kHz.
SETTINGS = [(0.5, 300, 0), (0.5, 100, 30), (0.35, 500, 64), (0.7, 200, 0)]


class _Recording:
    """silero-vad's OnnxWrapper, recording each chunk's probability."""

    def __init__(self, model):
        self.model, self.probs = model, []

    def reset_states(self):
        self.model.reset_states()

    def __call__(self, x, sr):
        out = self.model(x, sr)
        self.probs.append(float(out.item()))
        return out


class _RecordingOnnx(vad.SileroOnnx):
    def __init__(self):
        super().__init__()
        self.probs: list[float] = []

    def prob(self, chunk):
        p = super().prob(chunk)
        self.probs.append(p)
        return p


@pytest.fixture(scope="module")
def silero():
    torch = pytest.importorskip("torch")
    silero_vad = pytest.importorskip("silero_vad")
    torch.set_num_threads(1)
    return torch, silero_vad, _Recording(silero_vad.load_silero_vad(onnx=True))


@pytest.fixture(scope="module")
def ours():
    return _RecordingOnnx()


@pytest.fixture(scope="module")
def signals(speech):
    a = speech("Hello there, could you tell me what the weather is like today?", SR)
    b = speech("Thanks. And tomorrow?", SR)
    c = speech("I see, that sounds lovely.", SR)
    # Pauses shorter and longer than the min silences above; the ends are not chunk-aligned.
    pauses = np.concatenate([zeros(0.7, SR), a, zeros(0.25, SR), b, zeros(0.9, SR), c, zeros(0.13, SR),
                             a[: SR // 2], zeros(1.0, SR)])
    rng = np.random.default_rng(1234)
    # White noise over the same speech: probabilities hover around the thresholds in the pauses.
    noisy = np.clip(pauses + (0.1 * rng.standard_normal(len(pauses))).astype(np.float32), -1, 1)
    noise = (0.3 * rng.standard_normal(3 * SR)).astype(np.float32)  # loud noise, no speech
    return {"pauses": pauses, "noisy": noisy.astype(np.float32), "noise": noise}


def _reference(silero, audio, threshold, min_silence_ms, speech_pad_ms):
    torch, silero_vad, model = silero
    model.probs = []
    it = silero_vad.VADIterator(model, threshold=threshold, sampling_rate=SR,
                                min_silence_duration_ms=min_silence_ms, speech_pad_ms=speech_pad_ms)
    events = []
    for chunk in vad.chunks(audio):
        ev = it(torch.from_numpy(chunk.copy()))
        if ev:
            ((kind, at),) = ev.items()
            events.append((kind, at, it.current_sample))
    return events, list(model.probs)


def _endpointer(ours, audio, threshold, min_silence_ms, speech_pad_ms):
    ours.probs = []
    ep = vad.Endpointer(ours, threshold=threshold, min_silence_ms=min_silence_ms, speech_pad_ms=speech_pad_ms)
    events = []
    for chunk in vad.chunks(audio):
        ev = ep.push(chunk)
        if ev is not None:
            at, detected = ev.at * SR, ev.detected * SR
            assert at == pytest.approx(round(at), abs=1e-6) and detected == pytest.approx(round(detected), abs=1e-6)
            events.append((ev.kind, round(at), round(detected)))
    return events, list(ours.probs)


@pytest.mark.parametrize("name", ["pauses", "noisy", "noise"])
@pytest.mark.parametrize("threshold, min_silence_ms, speech_pad_ms", SETTINGS)
def test_endpointer_events_match_vaditerator(silero, ours, signals, name, threshold, min_silence_ms,
                                             speech_pad_ms):
    audio = signals[name]
    ref, ref_probs = _reference(silero, audio, threshold, min_silence_ms, speech_pad_ms)
    got, probs = _endpointer(ours, audio, threshold, min_silence_ms, speech_pad_ms)
    assert len(probs) == len(ref_probs) == len(audio) // vad.CHUNK
    # The same model on the same inputs; the two drivers may differ only in the last float bits.
    np.testing.assert_allclose(probs, ref_probs, rtol=0, atol=1e-5)
    # Same events: kind, boundary sample, and the chunk end that decided it.
    assert got == ref
    kinds = [k for k, _, _ in got]
    assert kinds == ["start", "end"] * (len(kinds) // 2)  # every start ends (each signal ends without speech)
    if name != "noise":  # the 0.9 s pause splits the speech into two turns at least
        assert len(kinds) >= 4
    # vad.endpoints (what the runners call) gives the same events as pushing chunk by chunk.
    ep = vad.Endpointer(ours, threshold=threshold, min_silence_ms=min_silence_ms, speech_pad_ms=speech_pad_ms)
    assert [(e.kind, round(e.at * SR), round(e.detected * SR)) for e in vad.endpoints(ep, audio)] == got


@pytest.mark.parametrize("sr", [16000, 22050, 24000, 44100, 48000, 11025])
def test_stream_resampler_gives_the_whole_signal_resample_and_never_reads_ahead(sr):
    """vad.StreamResampler, fed 40 ms frames (the last zero-padded as the core pads it), hands out
    exactly wavio.resample of the whole signal, bit for bit; and what it has handed out after
    frame k does not change when everything after frame k is replaced by other audio."""
    from duplexeval_common.wavio import resample
    rng = np.random.default_rng(sr)
    n = int(1.3 * sr) + 7
    x = (0.3 * rng.standard_normal(n)).astype(np.float32)
    x[n // 3:n // 2] = 0.0
    F = int(0.04 * sr)
    frames = [np.pad(x[i:i + F], (0, max(0, i + F - n))) for i in range(0, n, F)]
    rs = vad.StreamResampler(sr, SR, n)
    parts = [rs.push(f) for f in frames] + [rs.flush()]
    assert np.array_equal(np.concatenate(parts), resample(x, sr, SR))
    k = len(frames) // 2
    other = x.copy()
    other[(k + 1) * F:] = (0.5 * rng.standard_normal(n - (k + 1) * F)).astype(np.float32)
    rs2 = vad.StreamResampler(sr, SR, n)
    early = np.concatenate([rs2.push(f) for f in frames[:k + 1]])
    assert len(early) > 0 and np.array_equal(early, np.concatenate(parts)[:len(early)])
    assert np.array_equal(early, resample(other, sr, SR)[:len(early)])
    # It holds back only the filter's lookahead, under a millisecond of input.
    heard_s = (k + 1) * F / sr
    assert heard_s - 0.001 < len(early) / SR <= heard_s
