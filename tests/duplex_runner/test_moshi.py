"""The in-process `moshi` runner and the Moshi WebSocket protocol test double (moshi_server.py).

Both need moshi, which lives in its own environment, .venvs/runner-moshi (made by
scripts/setup-runner-venv.sh moshi; `make setup` calls it): every test runs that environment's
python in a subprocess, and all of them skip, saying so, when it does not exist. The model is
the tiny random-weight Mimi + LM of duplexeval_runner_moshi/tiny.py (`model_dir: "tiny:<seed>"`):
the real moshi classes and streaming code on torch 2.13, with noise for audio. The server is a
protocol test double backed by that tiny model, not Moshi.
"""

from __future__ import annotations

import json
import subprocess
import textwrap
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from duplexeval_common.jsonio import read_json, read_jsonl
from duplexeval_common.wavio import write_wav

ROOT = Path(__file__).resolve().parents[2]
VENV = ROOT / ".venvs" / "runner-moshi"
PY = VENV / "bin" / "python"
CLI = VENV / "bin" / "duplex-runner"
SERVER = Path(__file__).with_name("moshi_server.py")
FRAME = 1920
HINT = "huggingface-cli download kyutai/moshiko-pytorch-bf16 --local-dir"

pytestmark = pytest.mark.own_env("runner-moshi")  # waits for it, or skips without it (the root conftest.py)


def venv_python(code: str, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    """Run a script with the moshi environment's python; it must exit 0."""
    proc = subprocess.run([str(PY), "-c", textwrap.dedent(code), *args], capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc


def stage(tmp_path: Path, name: str, runner_args: dict, seed: int | None = 0, command: str = "run",
          inputs: Path | None = None) -> subprocess.CompletedProcess:
    config = tmp_path / f"{name}.json"
    config.write_text(json.dumps({"runner": "moshi", "runner_args": runner_args, "seed": seed}))
    cmd = [str(CLI), command, "--config", str(config)]
    if command == "run":
        cmd += ["--input", str(inputs), "--output", str(tmp_path / name)]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=180, cwd=ROOT)


@pytest.fixture(scope="module")
def samples(tmp_path_factory) -> tuple[Path, dict]:
    """Two short inputs: 1.0 s at 16 kHz and 1.3 s at 24 kHz (not a whole number of frames)."""
    root = tmp_path_factory.mktemp("moshi-in")
    rng = np.random.default_rng(7)
    inputs = {"a": (0.1 * rng.standard_normal(16000)).astype(np.float32),
              "b": (0.1 * rng.standard_normal(31200)).astype(np.float32)}
    rates = {"a": 16000, "b": 24000}
    for sid, x in inputs.items():
        d = root / "samples" / "synthetic_turn_taking" / sid
        d.mkdir(parents=True)
        write_wav(d / "input.wav", x, rates[sid])
    return root, rates


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory, samples) -> Path:
    """The stage's output for the tiny:0 model, seed 0, the default profile."""
    out = tmp_path_factory.mktemp("moshi-tiny")
    proc = stage(out, "one", {"model_dir": "tiny:0", "threads": 1}, inputs=samples[0])
    assert proc.returncode == 0, proc.stderr
    return out / "one"


def outputs(folder: Path) -> dict[str, bytes]:
    return {p.parent.name: p.read_bytes() for p in sorted(folder.glob("samples/*/*/output.wav"))}


def test_tiny_model_through_the_stage_is_deterministic_and_keeps_lengths(tmp_path, samples, tiny_run):
    root, rates = samples
    again = stage(tmp_path, "two", {"model_dir": "tiny:0", "threads": 1}, inputs=root)
    assert again.returncode == 0, again.stderr
    other = stage(tmp_path, "three", {"model_dir": "tiny:0", "profile": "moshi-server", "threads": 1}, seed=1,
                  inputs=root)
    assert other.returncode == 0, other.stderr

    one, two, three = outputs(tiny_run), outputs(tmp_path / "two"), outputs(tmp_path / "three")
    assert set(one) == {"a", "b"}
    assert one == two, "the same seed must give the same bytes"
    assert all(one[s] != three[s] for s in one), "another seed and profile must give other output"
    for sid, sr in rates.items():
        d = tiny_run / "samples" / "synthetic_turn_taking" / sid
        user, user_sr = sf.read(root / "samples" / "synthetic_turn_taking" / sid / "input.wav")
        out, out_sr = sf.read(d / "output.wav", dtype="float32")
        assert (out_sr, len(out)) == (user_sr, len(user)) == (sr, len(user))
        rec = read_json(d / "runner.json")
        assert rec["runner"] == "moshi" and rec["clock"] == "lockstep" and rec["kind"] == "step"
        assert rec["deterministic"] is True and rec["status"] == "ok"
        assert rec["settings"]["runner_in_sr"] == rec["settings"]["runner_out_sr"] == 24000
        assert rec["settings"]["lm_gen"] == {"temp": 0.8, "temp_text": 0.7, "top_k": 250, "top_k_text": 25,
                                             "use_sampling": True, "cfg_coef": 1.0}
        assert rec["settings"]["device"] == "cpu" and rec["settings"]["dtype"] == "float32"
        assert rec["settings"]["env"] == {"NO_TORCH_COMPILE": "1", "NO_CUDA_GRAPH": "1"}
        assert rec["models"]["moshi"]["seed"] == 0 and len(rec["models"]["moshi"]["config_sha256"]) == 64
        assert rec["profile"]["name"] == "moshi"
        n_frames = -(-round(len(user) * 24000 / sr) // FRAME)
        assert rec["stats"]["steps"] == n_frames
        events = read_jsonl(d / "events.jsonl")
        text = [e for e in events if e["type"] == "text"]
        assert text and all(isinstance(e["token_id"], int) and e["token_id"] not in (0, 3) for e in text)
        assert rec["stats"]["text_tokens"] == len(text)
        assert all("wall" not in e for e in events)
    # run_inference.py's first frame (stepped twice): audio from frame 0 on. server.py's (the
    # moshi-server profile): frame 0 is zeros, then audio.
    b1, _ = sf.read(tiny_run / "samples" / "synthetic_turn_taking" / "b" / "output.wav", dtype="float32")
    b3, _ = sf.read(tmp_path / "three" / "samples" / "synthetic_turn_taking" / "b" / "output.wav", dtype="float32")
    assert np.abs(b1[:FRAME]).max() > 1e-3
    assert np.abs(b3[:FRAME]).max() == 0.0 and np.abs(b3[FRAME:2 * FRAME]).max() > 1e-3
    rec3 = read_json(tmp_path / "three" / "samples" / "synthetic_turn_taking" / "b" / "runner.json")
    assert rec3["settings"]["first_frame"] == "skip" and rec3["profile"]["name"] == "moshi-server"


STEP_CONTRACT = """
    import numpy as np
    from duplexeval_common.errors import DuplexEvalError
    from duplexeval_runner.events import EventLog
    from duplexeval_runner.harness import render
    from duplexeval_runner_moshi.runner import MoshiRunner

    class Spy(MoshiRunner):
        def open(self, session):
            super().open(session)
            self.seen = 0
            self.calls = []

        def step(self, frame, session):
            k = len(self.calls)
            self.seen += len(frame)
            assert self.seen <= (k + 1) * 1920, (k, self.seen)
            # by step k the runner has the input up to the end of frame k, never more
            assert abs(session.now() - (k + 1) * 0.08) < 1e-9, (k, session.now())
            self.calls.append(len(frame))
            return super().step(frame, session)

    r = Spy(seed=3, model_dir="tiny:1", warmup_frames=0, threads=1)
    x = (0.1 * np.random.default_rng(0).standard_normal(24000 * 7 // 10)).astype(np.float32)
    y, session = render(r, x, 24000, EventLog(record_wall=False))
    assert len(y) == len(x) and r.calls == [1920] * 9, r.calls
    assert session.stats["steps"] == 9
    # the tokens of output frame k are stamped where frame k is placed
    texts = session.log.of_type("text")
    assert texts and all(abs(e["t"] - e["frame"] * 0.08) < 1e-9 for e in texts)
    r.open(session)
    try:
        MoshiRunner.step(r, np.zeros(960, np.float32), session)
    except DuplexEvalError as exc:
        assert "expected (1920,)" in str(exc) and "\\n" not in str(exc)
    else:
        raise AssertionError("a short frame was accepted")
    print("ok")
"""


def test_step_contract_one_frame_per_step_never_ahead_of_the_clock():
    assert venv_python(STEP_CONTRACT).stdout.strip().endswith("ok")


SNAPSHOT = """
    import json, random, sys
    from pathlib import Path
    import sentencepiece as spm
    from safetensors.torch import save_file
    from duplexeval_runner_moshi import tiny
    tiny.cpu_env()
    d = Path(sys.argv[1])
    d.mkdir(parents=True)
    rng = random.Random(0)
    words = ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(2, 7))) for _ in range(400)]
    (d / "corpus.txt").write_text("\\n".join(" ".join(rng.choice(words) for _ in range(12)) for _ in range(300)))
    spm.SentencePieceTrainer.train(input=str(d / "corpus.txt"), model_prefix=str(d / "tok"), vocab_size=100,
                                   model_type="bpe", minloglevel=2)
    mimi, lm = tiny.build(0)
    save_file({k: v.contiguous() for k, v in mimi.state_dict().items()}, str(d / "mimi.safetensors"))
    save_file({k: v.contiguous() for k, v in lm.state_dict().items()}, str(d / "lm.safetensors"))
    (d / "mimi.json").write_text(json.dumps(tiny.mimi_config()))
    (d / "config.json").write_text(json.dumps(dict(tiny.lm_kwargs(), moshi_name="lm.safetensors",
        mimi_name="mimi.safetensors", tokenizer_name="tok.model", mimi_config_name="mimi.json")))
"""


def test_a_local_snapshot_loads_through_moshis_loaders_like_the_hub_layout(tmp_path, samples, tiny_run):
    """A folder laid out as a Hugging Face snapshot (config.json naming the files), holding the tiny
    model's weights: loaded with moshi's own loaders (safetensors, CheckpointInfo) it gives the
    very bytes the tiny:0 model gives, and the tokenizer turns text tokens into pieces."""
    root, _ = samples
    snap = tmp_path / "snapshot"
    venv_python(SNAPSHOT, str(snap))
    loaded = stage(tmp_path, "local", {"model_dir": str(snap), "threads": 1}, inputs=root)
    assert loaded.returncode == 0, loaded.stderr
    assert outputs(tmp_path / "local") == outputs(tiny_run)
    d = tmp_path / "local" / "samples" / "synthetic_turn_taking" / "b"
    rec = read_json(d / "runner.json")
    files = rec["models"]["moshi"]["files"]
    assert set(files) == {"lm.safetensors", "mimi.safetensors", "tok.model", "mimi.json", "config.json"}
    assert all(len(h) == 64 for h in files.values())
    text = [e for e in read_jsonl(d / "events.jsonl") if e["type"] == "text"]
    assert text and all(isinstance(e["text"], str) and e["text"] and "\u2581" not in e["text"] for e in text)

    # the same folder without the Mimi weights: one line naming the file and how to get the weights
    (snap / "mimi.safetensors").unlink()
    bad = stage(tmp_path, "gone", {"model_dir": str(snap)}, command="check")
    assert bad.returncode == 2
    lines = bad.stderr.strip().splitlines()
    assert len(lines) == 1 and "mimi.safetensors" in lines[0] and HINT in lines[0], bad.stderr


@pytest.mark.parametrize("args, env, says", [
    ({"model_dir": "/nonexistent/moshiko"}, {}, ["/nonexistent/moshiko is not a folder", HINT]),
    ({}, {"MODEL_DIR": "/nonexistent/from-env"}, ["/nonexistent/from-env", HINT]),
    ({}, {"MODEL_DIR": ""}, ["no weights", "MODEL_DIR", HINT, "tiny:<seed>"]),
    ({"model_dir": "EMPTY"}, {}, ["has no model.safetensors (the Moshi LM weights)", HINT]),
    ({"model_dir": "tiny:x"}, {}, ["tiny:<seed> needs a non-negative whole number"]),
    ({"model_dir": "tiny:0", "device": "tpu"}, {}, ["device must be one of cpu, cuda"]),
    ({"model_dir": "tiny:0", "first_frame": "twice"}, {}, ["first_frame must be one of repeat, skip"]),
    ({"model_dir": "tiny:0", "top_k": -1}, {}, ["top_k must be an integer >= 0"]),
    ({"model_dir": "tiny:0", "temperature": 1}, {}, ["unknown runner_args temperature"]),
    ({"model_dir": "tiny:0", "profile": "nope"}, {}, ["unknown profile 'nope'", "moshi-server"]),
])
def test_bad_settings_are_one_line_errors(tmp_path, monkeypatch, args, env, says):
    if args.get("model_dir") == "EMPTY":
        (tmp_path / "empty").mkdir()
        args = {**args, "model_dir": str(tmp_path / "empty")}
    monkeypatch.delenv("MODEL_DIR", raising=False)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    proc = stage(tmp_path, "bad", args, command="check")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: runner 'moshi': "), lines
    for s in says:
        assert s in lines[0], lines[0]


# --- the protocol test double (moshi_server.py) ---------------------------------------------------

CLIENT = """
    import asyncio, json, sys, time
    import aiohttp, numpy as np, sphn

    URL = "http://127.0.0.1:" + sys.argv[1]
    SCENARIO = sys.argv[2]
    SR, F = 24000, 1920

    def voice(seconds):
        t = np.arange(int(round(seconds * SR))) / SR
        return (0.3 * np.sin(2 * np.pi * 300 * t)).astype(np.float32)

    async def session(http, x, query="", idle=3.0, first_wait=20.0):
        \"\"\"Send x as Ogg-Opus frames; (handshake wait, [kinds], pcm, texts, how it ended): ended
        "idle" when no message came for `idle` s (`first_wait` s for the first: the double's model
        runs on a CPU that the image build and other tests share, and a reply that had not come
        after 0.8 s once ended a session with none).\"\"\"
        writer, reader = sphn.OpusStreamWriter(SR), sphn.OpusStreamReader(SR)
        async with http.ws_connect(URL + "/api/chat" + query) as ws:
            t0 = time.monotonic()
            first = await ws.receive()
            assert first.type == aiohttp.WSMsgType.BINARY and first.data == b"\\x00", first
            waited = time.monotonic() - t0
            kinds, pcm, texts, ended = [], [], [], "idle"
            for k in range(len(x) // F):
                data = writer.append_pcm(x[k * F:(k + 1) * F])
                if data:
                    await ws.send_bytes(b"\\x01" + data)
            await ws.send_bytes(b"\\x07ignored")  # an unknown kind: logged and ignored
            while True:
                try:
                    msg = await asyncio.wait_for(ws.receive(), idle if kinds else first_wait)
                except asyncio.TimeoutError:
                    break
                if msg.type != aiohttp.WSMsgType.BINARY:
                    ended = msg.type.name
                    break
                kinds.append(msg.data[0])
                if msg.data[0] == 1:
                    pcm.append(reader.append_bytes(msg.data[1:]))
                elif msg.data[0] == 2:
                    texts.append(msg.data[1:].decode("utf8"))
        pcm = np.concatenate(pcm) if pcm else np.zeros(0, np.float32)
        return waited, kinds, pcm, texts, ended

    async def main():
        out = {}
        async with aiohttp.ClientSession() as http:
            x = voice(1.6)  # 20 frames
            if SCENARIO == "protocol":
                waited, kinds, pcm, texts, ended = await session(http, x, "?text_prompt=hello&seed=5&voice_prompt=v.pt")
                out["first"] = dict(waited=waited, audio=kinds.count(1), text=kinds.count(2), pcm=len(pcm),
                                    texts=texts[:3], others=sorted(set(kinds) - {1, 2}), ended=ended)
                pcm2 = (await session(http, x, "?seed=5"))[2]  # the same seed: the same session
                out["same_seed_same_pcm"] = bool(len(pcm2) == len(pcm) and np.array_equal(pcm, pcm2))
                async with http.post(URL + "/api/settings", data="{oops") as r:
                    out["bad_settings"] = r.status
                async with http.post(URL + "/api/settings", json={"temp": 0.5, "top_k_text": 5}) as r:
                    out["settings"] = [r.status, await r.json()]
                # two at once: the second is accepted, but its handshake waits for the first to end
                a = asyncio.ensure_future(session(http, x, "?who=a"))
                await asyncio.sleep(0.3)
                b = await session(http, x[: 3 * F], "?who=b")
                await a
                out["waited_b"] = b[0]
            else:  # --die-after-frames 6 --die-times 1 --reply-after-silence 0.5
                waited, kinds, pcm, texts, ended = await session(http, x)
                out["dies"] = dict(audio=kinds.count(1), ended=ended)
                user = np.concatenate([voice(0.8), np.zeros(int(1.6 * SR), np.float32)])
                waited, kinds, pcm, texts, ended = await session(http, user)
                # FDB's client layout: one frame of zeros, then the decoded output back to back
                out_line = np.concatenate([np.zeros(F, np.float32), pcm])
                loud = np.flatnonzero(np.abs(out_line) > 0.02)
                out["gate"] = dict(audio=kinds.count(1), first_loud=int(loud[0]) if len(loud) else -1)
            async with http.get(URL + "/api/sessions") as r:
                out["sessions"] = await r.json()
        print(json.dumps(out))

    asyncio.run(main())
"""


def start_double(*args: str) -> tuple[subprocess.Popen, int]:
    proc = subprocess.Popen([str(PY), str(SERVER), "--print-port", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=ROOT)
    line = proc.stdout.readline().strip()
    if not line.isdigit():
        proc.kill()
        raise AssertionError(f"the double did not start: {line!r} {proc.stderr.read()}")
    return proc, int(line)


def stop(proc: subprocess.Popen) -> str:
    proc.terminate()
    try:
        _, err = proc.communicate(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
    return err


def test_the_double_speaks_moshis_byte_protocol():
    """Handshake first (after the prompt phase), Ogg-Opus both ways, text, unknown kinds ignored,
    one session at a time, the query parameters and FLM-Audio's settings endpoint, against a raw
    aiohttp client."""
    proc, port = start_double("--handshake-delay", "0.4", "--seed", "2")
    try:
        res = json.loads(venv_python(CLIENT, str(port), "protocol").stdout)
    finally:
        err = stop(proc)
    first = res["first"]
    assert first["waited"] >= 0.35, first
    # 20 frames in: the first LMGen step yields nothing (server.py), then one Ogg-Opus message per
    # step, each 1920 samples once decoded, and a text message per non-padding text token
    assert first["audio"] == 19 and first["pcm"] == 19 * FRAME, first
    assert 0 < first["text"] <= 19 and all(t.startswith(" <") for t in first["texts"]), first
    assert first["others"] == [] and first["ended"] == "idle", first
    assert res["same_seed_same_pcm"] is True
    assert res["bad_settings"] == 400 and res["settings"] == [200, {"status": "success"}]
    assert res["waited_b"] >= 1.0, res["waited_b"]  # the lock: b's handshake only after a ended
    sessions = res["sessions"]
    assert [s["query"] for s in sessions] == [{"text_prompt": "hello", "seed": "5", "voice_prompt": "v.pt"},
                                              {"seed": "5"}, {"who": "a"}, {"who": "b"}]
    assert sessions[0]["frames_in"] == 20 and sessions[0]["state"] == "closed"
    assert sessions[0]["settings"]["temp"] == 0.8
    assert sessions[2]["settings"]["temp"] == 0.5 and sessions[2]["settings"]["top_k_text"] == 5
    assert "unknown message kind 7" in err


def test_the_double_dies_mid_session_once_and_gates_its_reply_after_silence():
    proc, port = start_double("--die-after-frames", "6", "--die-times", "1", "--reply-after-silence", "0.5")
    try:
        res = json.loads(venv_python(CLIENT, str(port), "die").stdout)
    finally:
        stop(proc)
    # dropped after 6 frames in (5 replies), without a close handshake
    assert res["dies"]["audio"] == 5 and res["dies"]["ended"] in ("CLOSED", "ERROR", "CLOSE"), res["dies"]
    assert [s["state"] for s in res["sessions"]] == ["died", "closed"]
    # the next session is served: 0.8 s of voice then silence; the reply starts 0.5 s after the
    # voice ends (plus the Opus codec's delay each way, well under a frame)
    gate = res["gate"]
    assert gate["audio"] == 29
    assert 1.3 * 24000 <= gate["first_loud"] <= 1.3 * 24000 + FRAME, gate
