"""The TTS segment cache (duplexeval_tts/segment_cache.py): off unless DUPLEXEVAL_TTS_CACHE names a
folder; a segment read from it is the bytes synthesis gives; every part of the key moves it; a
damaged entry is synthesized again; an unusable folder is no cache; engines without a complete
identity never take part; and a dataset stage gives the same files with and without it."""

import hashlib
import json

import numpy as np
import pytest

from duplexeval_common.hashing import sha256_file
from duplexeval_tts import engines, segment_cache

from .conftest import DATASET, run_cli, write_config

TEXT = "The segment cache keeps what was said."


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv(segment_cache.ENV, str(tmp_path / "tts-cache"))
    return tmp_path / "tts-cache"


@pytest.fixture(scope="module")
def piper():
    return engines.load_engine("piper")


def entries(folder):
    return sorted(folder.rglob("*.f32")) if folder.exists() else []


def test_off_by_default_and_when_off(piper, tmp_path, monkeypatch):
    for value in (None, "", "off", "0"):
        if value is None:
            monkeypatch.delenv(segment_cache.ENV, raising=False)
        else:
            monkeypatch.setenv(segment_cache.ENV, value)
        assert segment_cache.root() is None
    monkeypatch.chdir(tmp_path)
    engines.render(piper, TEXT, 16000)
    assert list(tmp_path.rglob("*.f32")) == []


def test_a_cached_segment_is_the_synthesized_bytes_and_synthesis_is_skipped(piper, cache, monkeypatch):
    monkeypatch.setenv(segment_cache.ENV, "off")
    fresh = engines.render(piper, TEXT, 16000)
    monkeypatch.setenv(segment_cache.ENV, str(cache))
    first = engines.render(piper, TEXT, 16000)
    assert first.tobytes() == fresh.tobytes() and len(entries(cache)) == 1

    def no_synthesis(text):
        raise AssertionError("synthesized although cached")
    monkeypatch.setattr(piper, "synthesize", no_synthesis)
    again = engines.render(piper, TEXT, 16000)
    assert again.dtype == np.float32 and again.tobytes() == fresh.tobytes()


def test_every_part_of_the_key_moves_it(piper, monkeypatch):
    base = segment_cache.key(piper, TEXT, 16000)
    assert base == segment_cache.key(piper, TEXT, 16000)
    others = {segment_cache.key(piper, TEXT + " ", 16000), segment_cache.key(piper, TEXT, 24000)}
    monkeypatch.setattr(piper, "settings", {**piper.settings, "noise_scale": 0.5})
    others.add(segment_cache.key(piper, TEXT, 16000))
    monkeypatch.undo()
    monkeypatch.setattr(piper, "model_sha256", "0" * 64)
    others.add(segment_cache.key(piper, TEXT, 16000))
    monkeypatch.undo()
    monkeypatch.setattr(piper, "rate", 1.25)
    others.add(segment_cache.key(piper, TEXT, 16000))
    monkeypatch.undo()
    monkeypatch.setenv("ORT_TEST_NUMERIC_SETTING", "1")  # the numeric environment
    others.add(segment_cache.key(piper, TEXT, 16000))
    monkeypatch.undo()
    monkeypatch.setenv("PHONEMIZER_ESPEAK_LIBRARY", "/elsewhere/libespeak-ng.so")
    others.add(segment_cache.key(piper, TEXT, 16000))
    monkeypatch.undo()
    monkeypatch.setattr(segment_cache, "_machine", lambda: {"arch": "riscv64", "cpu_flags_sha256": "0"})
    others.add(segment_cache.key(piper, TEXT, 16000))
    monkeypatch.undo()
    monkeypatch.setattr(segment_cache, "_code", lambda module: "another version of the code")
    others.add(segment_cache.key(piper, TEXT, 16000))
    monkeypatch.undo()
    assert base not in others and len(others) == 9
    # a thread count is not part of it: tts-synth's workers set OMP_NUM_THREADS=1, the stage's own
    # process does not, and the engines that take part run onnxruntime on one thread of their own
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    assert segment_cache.key(piper, TEXT, 16000) == base


def test_engines_without_a_complete_identity_take_no_part(piper, monkeypatch):
    class Hosted:
        name, voice, rate, sample_rate, model_sha256, settings = "openai", "alloy", 1.0, 24000, None, {}
        deterministic, segment_cache = False, True
    assert segment_cache.key(Hosted(), TEXT, 16000) is None
    from duplexeval_tts.espeak_engine import EspeakEngine
    from duplexeval_tts.openai_engine import OpenAIEngine
    assert not getattr(EspeakEngine, "segment_cache", False) and not getattr(OpenAIEngine, "segment_cache", False)


@pytest.mark.parametrize("damage", ["flip", "truncate", "empty"])
def test_a_damaged_entry_is_synthesized_again_and_rewritten(piper, cache, damage):
    good = engines.render(piper, TEXT, 16000)
    [entry] = entries(cache)
    data = bytearray(entry.read_bytes())
    if damage == "flip":
        data[100] ^= 0x01
    elif damage == "truncate":
        data = data[:-3]
    else:
        data = b""
    entry.write_bytes(bytes(data))
    assert engines.render(piper, TEXT, 16000).tobytes() == good.tobytes()
    payload = entry.read_bytes()[32:]
    assert hashlib.sha256(payload).digest() == entry.read_bytes()[:32] and payload == good.tobytes()


def test_an_unusable_folder_is_no_cache_and_says_so_once(piper, tmp_path, monkeypatch, capsys):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv(segment_cache.ENV, str(blocker / "tts"))
    segment_cache._usable.cache_clear()
    assert segment_cache.root() is None
    assert engines.render(piper, TEXT, 16000).size > 0
    assert engines.render(piper, TEXT + " Again.", 16000).size > 0
    notes = [line for line in capsys.readouterr().err.splitlines() if line.startswith("note:")]
    assert len(notes) == 1 and segment_cache.ENV in notes[0] and "without the segment cache" in notes[0]


def test_a_relative_folder_is_taken_from_where_the_process_starts(piper, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(segment_cache.ENV, "rel-cache")
    assert segment_cache.root() == tmp_path / "rel-cache"


def test_a_voice_that_cannot_load_stops_at_once_without_the_cache(tmp_path, monkeypatch):
    """Without the cache the Piper voice loads when the engine is made (a broken model is the
    stage's one-line error before any sample); with it, at the first synthesis."""
    from duplexeval_tts import piper_engine
    calls = []
    monkeypatch.setattr(piper_engine, "load_voice", lambda *a: calls.append(a) or (_ for _ in ()).throw(
        RuntimeError("broken model")))
    monkeypatch.setenv(segment_cache.ENV, "off")
    with pytest.raises(RuntimeError, match="broken model"):
        piper_engine.PiperEngine()
    monkeypatch.setenv(segment_cache.ENV, str(tmp_path / "c"))
    engine = piper_engine.PiperEngine()
    assert engine.sample_rate == 22050 and len(calls) == 1


def test_a_dataset_stage_gives_the_same_files_with_and_without_the_cache(tmp_path, monkeypatch):
    """Two samples of fdb-mini, synthesized without the cache, then twice with it (the second
    run from it alone): every file's sha256 is the same."""
    cfg = write_config(tmp_path / "cfg.json", {"benchmark": "fdb-v1", "dataset": "fdb-mini", "limit": 1,
                                                "subsets": ["synthetic_turn_taking", "synthetic_user_interruption"]})

    def run(out, cache_value):
        monkeypatch.setenv(segment_cache.ENV, cache_value)
        r = run_cli(["run", "--input", DATASET, "--output", tmp_path / out, "--config", cfg])
        assert r.returncode == 0, r.stderr
        return {p.relative_to(tmp_path / out).as_posix(): sha256_file(p)
                for p in sorted((tmp_path / out).rglob("*")) if p.is_file() and p.name != "stage.json"}

    plain = run("plain", "off")
    warmed = run("warm", str(tmp_path / "c"))
    n = len(entries(tmp_path / "c"))
    cached = run("cached", str(tmp_path / "c"))
    assert n > 0 and len(entries(tmp_path / "c")) == n
    assert plain == warmed == cached and any(k.endswith(".wav") for k in plain)
    assert json.loads((tmp_path / "cached" / "stage.json").read_text())["samples"]


def test_writers_of_one_entry_at_once_leave_one_valid_entry(cache, monkeypatch):
    """Processes (here threads) writing the same entry side by side: each writes its own temporary
    file and renames it, so what is left is one whole entry and no temporary file."""
    import threading
    seg = np.linspace(-0.5, 0.5, 48000, dtype=np.float32)
    threads = [threading.Thread(target=segment_cache.put, args=("ab" * 32, seg)) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [p.name for p in cache.rglob("*") if p.is_file()] == ["ab" * 32 + ".f32"]
    assert segment_cache.get("ab" * 32).tobytes() == seg.tobytes()
