"""Regenerates golden.json by running upstream's Full-Duplex-Bench v1.5 scripts, unchanged, on tree/.

    python benchmarks/fdb-v1.5/duplexeval_fdb_v1_5/tests/golden/regenerate.py UPSTREAM_CHECKOUT [--commit SHA]

UPSTREAM_CHECKOUT is a checkout (or `git archive` extract) of DanielLin94144/Full-Duplex-Bench
holding v1_v1.5/evaluation/. The revision is read with `git rev-parse HEAD` in a git work tree,
else it must be given with --commit. Besides the project virtualenv, the scripts need pandas,
statsmodels (significance_test.py) and praat-parselmouth (pitch and intensity) importable, e.g.
from a folder on PYTHONPATH (golden/README.md has the commands).

Nothing of the upstream code is copied here: this driver runs it in a child process (this file
with --child), from a temporary copy of tree/ whose .flac files are turned into .wav files with
the same samples. What the child adds around upstream's code:

* torch.hub.load (get_timing.py and eval_general_before_after.py load Silero through it, which
  needs the network) is replaced at run time by a function returning the silero-vad package's
  own JIT model, load_silero_vad(onnx=False), and its utils tuple (get_speech_timestamps,
  save_audio, read_audio, VADIterator, collect_chunks). torch runs one thread.
* torchaudio.load needs torchcodec in torchaudio >= 2.9; where that is missing it is replaced
  by a soundfile reader returning (float32 tensor [channels, frames], rate), the values
  torchaudio gives for PCM_16 WAV. torchaudio.functional.resample is torchaudio's own.
* `utmosv2` (imported at the top of eval_general_before_after.py) is a stub module when not
  installed; UTMOSv2 is switched off, so nothing calls it, and SQUIM is off as in evaluate.py.
* python-dotenv is a no-op stub when not installed (not needed: evaluate.py is not run).

Runs, per subset folder of the copy (ROOT):

1. get_timing.py's main() with --root_dir ROOT: every latency_intervals.json it writes.
2. eval_general_before_after.eval_general_all_split(config, ROOT, aggregate=True), config being
   evaluate.py's general_before_after dict with "utmosv2": False: every general_split.json it
   writes, the aggregate it returns, and the order os.walk gave the samples.
3. significance_test.py's main_cli() with --root_dir ROOT --metrics utmosv2 wpm mean_pitch
   std_pitch mean_intensity std_intensity (its README's command), cwd the copy: the DataFrame
   run_batch_tests returns (recorded by a pass-through wrapper of that function), the pair_t
   file's lines, or the error it stops with.
4. eval_behavior.eval_behavior_all(ROOT, client, task="behavior", aggregate=True), cwd
   v1_v1.5/evaluation (it opens ./instruction/behavior.txt), client an openai.OpenAI pointed at
   a local stub of the chat-completions protocol on 127.0.0.1 (a test double: nothing leaves
   the machine). The stub records each request body and answers with prose around
   {"behaviour": [<the fixture's content_tag.json label, or C_UNKNOWN>]}; for
   user_interruption/0 its first answer has no such object, so upstream retries once (seed 2,
   after its 5 s sleep). Recorded per sample: each request's model, seed, body keys and the
   sha256 of its messages; the content_tag.json written; and the ratios returned.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import types
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

HERE = Path(__file__).resolve().parent
UPSTREAM = "DanielLin94144/Full-Duplex-Bench"
SUBSETS = ("user_interruption", "background_speech")
METRICS = ["utmosv2", "wpm", "mean_pitch", "std_pitch", "mean_intensity", "std_intensity"]
RETRY_ONCE = {"user_interruption/0"}


def copy_tree(dst: Path) -> None:
    import soundfile as sf
    shutil.copytree(HERE / "tree", dst)
    for f in dst.rglob("*.flac"):
        data, sr = sf.read(f, dtype="int16")
        sf.write(f.with_suffix(".wav"), data, sr, subtype="PCM_16")
        f.unlink()


def messages_sha256(messages) -> str:
    return hashlib.sha256(json.dumps(messages, ensure_ascii=False, sort_keys=True).encode("utf-8")).hexdigest()


# ---------------- child ----------------

def _shim() -> list[str]:
    import silero_vad
    import torch
    torch.set_num_threads(1)
    shimmed = ["torch.hub.load"]

    def hub_load(*args, **kwargs):
        utils = (silero_vad.get_speech_timestamps, silero_vad.save_audio, silero_vad.read_audio,
                 silero_vad.VADIterator, silero_vad.collect_chunks)
        return silero_vad.load_silero_vad(onnx=False), utils
    torch.hub.load = hub_load
    import torchaudio
    try:
        import torchcodec  # noqa: F401
    except ImportError:
        import soundfile as sf

        def load(path, *args, **kwargs):
            data, sr = sf.read(str(path), dtype="float32", always_2d=True)
            return torch.from_numpy(data.T.copy()), sr
        torchaudio.load = load
        shimmed.append("torchaudio.load")
    for name in ("utmosv2", "dotenv"):
        try:
            __import__(name)
        except ImportError:
            m = types.ModuleType(name)
            if name == "dotenv":
                m.load_dotenv = lambda *a, **k: None
            sys.modules[name] = m
            shimmed.append(name)
    return shimmed


class _Judge(BaseHTTPRequestHandler):
    tags: dict = {}
    inputs: dict = {}
    log: list = []
    seen: set = set()

    def log_message(self, *a):
        pass

    def _send(self, obj):
        body = json.dumps(obj).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        self._send({"object": "list", "data": []})

    def do_POST(self):
        req = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        user = req["messages"][-1]["content"]
        sample = next((k for k, v in self.inputs.items() if f'"input_noisy": {v},' in user), None)
        self.log.append((sample, req))
        tag = self.tags.get(sample) or "C_UNKNOWN"
        if sample in RETRY_ONCE and sample not in self.seen:
            self.seen.add(sample)
            text = "The model responds to the overlap; label C_RESPOND."
        else:
            text = 'Reasoning first. {"note": "no label here"} Final: {"behaviour": ["%s"]}' % tag
        self._send({"id": "x", "object": "chat.completion", "created": 0, "model": req["model"],
                    "choices": [{"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": text}}],
                    "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}})


def child(evaluation: Path, work: Path, out: Path) -> None:
    shimmed = _shim()
    sys.path.insert(0, str(evaluation))
    import get_timing
    import eval_general_before_after as egba
    import significance_test as st
    result: dict = {"shimmed": shimmed, "subsets": {}}
    for subset in SUBSETS:
        root = work / "tree" / subset
        res: dict = {}
        sys.argv = ["get_timing.py", "--root_dir", str(root)]
        get_timing.main()
        res["timing"] = {d.name: json.loads((d / "latency_intervals.json").read_text())
                         for d in sorted(root.iterdir()) if (d / "latency_intervals.json").exists()}
        config = {"trim_silence": True, "squim": False, "utmosv2": False, "speaking_rate": True,
                  "trim_mode": "silero", "agg": {"mode": "trim", "trim_prop": 0.05}, "pitch": True,
                  "intensity": True}
        res["general_order"] = [Path(p).name for p in egba._collect_example_roots(str(root))]
        res["general_aggregate"] = egba.eval_general_all_split(config, str(root), aggregate=True)
        res["general"] = {d.name: json.loads((d / "general_split.json").read_text())
                          for d in sorted(root.iterdir()) if (d / "general_split.json").exists()}
        seen = []
        real = st.run_batch_tests

        def wrapped(*a, **k):
            df = real(*a, **k)
            seen.append(df.to_dict(orient="records"))
            return df
        st.run_batch_tests = wrapped
        os.chdir(work)
        sys.argv = ["significance_test.py", "--root_dir", str(root), "--metrics", *METRICS]
        try:
            st.main_cli()
            res["significance"] = {"tests": seen[0],
                                   "pair_t": (work / f"pair_t_{subset}.txt").read_text(encoding="utf-8").splitlines()}
        except Exception as exc:  # upstream stops: recorded as such
            res["significance"] = {"error": f"{type(exc).__name__}: {exc}"}
        st.run_batch_tests = real
        result["subsets"][subset] = res
    # behaviour, on a fresh copy (it overwrites content_tag.json)
    import openai
    from eval_behavior import eval_behavior_all
    bwork = work / "behaviour"
    shutil.copytree(work / "tree", bwork)
    for subset in SUBSETS:
        root = bwork / subset
        _Judge.tags = {f"{subset}/{d.name}": json.loads((d / "content_tag.json").read_text())["behaviour"][0]
                       for d in root.iterdir() if (d / "content_tag.json").exists()}
        _Judge.inputs = {f"{subset}/{d.name}": json.dumps(json.loads((d / "input.json").read_text()),
                                                          separators=(",", ":"), ensure_ascii=False)
                         for d in root.iterdir()}
        _Judge.log = []
        for d in root.iterdir():
            (d / "content_tag.json").unlink(missing_ok=True)
        srv = ThreadingHTTPServer(("127.0.0.1", 0), _Judge)
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        client = openai.OpenAI(base_url=f"http://127.0.0.1:{srv.server_address[1]}/v1", api_key="dummy",
                               max_retries=0)
        os.chdir(evaluation)
        ratios = eval_behavior_all(str(root), client, task="behavior", aggregate=True)
        srv.shutdown()
        reqs: dict = {}
        for sample, body in _Judge.log:
            reqs.setdefault(sample, []).append({
                "model": body["model"], "seed": body.get("seed"), "keys": sorted(body),
                "messages_sha256": messages_sha256(body["messages"]),
                "roles": [m["role"] for m in body["messages"]]})
        result["subsets"][subset]["behaviour"] = {
            "requests": dict(sorted(reqs.items())), "ratios": ratios,
            "content_tags": {d.name: json.loads((d / "content_tag.json").read_text())
                             for d in sorted(root.iterdir()) if (d / "content_tag.json").exists()}}
        if subset == "user_interruption":
            body = next(b for s, b in _Judge.log if s == "user_interruption/3")
            result["subsets"][subset]["behaviour"]["example_user_message"] = body["messages"][1]["content"]
    out.write_text(json.dumps(result, indent=1, sort_keys=True, allow_nan=True,
                              default=lambda o: o.item() if hasattr(o, "item") else str(o)))


# ---------------- parent ----------------

def _versions() -> dict:
    import importlib.metadata as md
    out = {"python": sys.version.split()[0]}
    for p in ("torch", "torchaudio", "silero-vad", "numpy", "scipy", "pandas", "statsmodels",
              "praat-parselmouth", "soundfile", "openai"):
        try:
            out[p] = md.version(p)
        except md.PackageNotFoundError:
            out[p] = None
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("checkout", type=Path)
    ap.add_argument("--commit")
    ap.add_argument("--child", nargs=3, metavar=("EVALUATION", "WORK", "OUT"))
    args = ap.parse_args()
    if args.child:
        child(*(Path(p) for p in args.child))
        return 0
    evaluation = (args.checkout / "v1_v1.5" / "evaluation").resolve()
    if not (evaluation / "get_timing.py").is_file():
        print(f"error: {evaluation} has no get_timing.py", file=sys.stderr)
        return 2
    commit = args.commit
    if commit is None:
        commit = subprocess.run(["git", "-C", str(args.checkout), "rev-parse", "HEAD"], capture_output=True,
                                text=True, check=True).stdout.strip()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        copy_tree(work / "tree")
        out = work / "result.json"
        env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONHASHSEED": "0"}
        subprocess.run([sys.executable, __file__, str(args.checkout), "--child", str(evaluation), str(work), str(out)],
                       check=True, env=env)
        result = json.loads(out.read_text())
    golden = {
        "upstream": UPSTREAM, "commit": commit, "evaluation": "v1_v1.5/evaluation",
        "command": "regenerate.py CHECKOUT --commit " + commit,
        "environment": _versions(), "shimmed": result["shimmed"], "subsets": result["subsets"],
        "general_config": {"trim_silence": True, "squim": False, "utmosv2": False, "speaking_rate": True,
                           "trim_mode": "silero", "agg": {"mode": "trim", "trim_prop": 0.05}, "pitch": True,
                           "intensity": True},
        "significance_metrics": METRICS,
    }
    (HERE / "golden.json").write_text(json.dumps(golden, indent=1, sort_keys=True, allow_nan=True) + "\n")
    print(f"wrote {HERE / 'golden.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
