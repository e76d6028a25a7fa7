"""Regenerates golden.json by running the official Full-Duplex-Bench v1.0 evaluators on the trees.

    python benchmarks/fdb-v1/duplexeval_fdb_v1/tests/golden/regenerate.py UPSTREAM_CHECKOUT [--commit SHA] [--trees tree_a tree_b]

UPSTREAM_CHECKOUT is a checkout (or `git archive` extract) of DanielLin94144/Full-Duplex-Bench;
its evaluate.py is found in v1_v1.5/evaluation/ (after the restructuring) or evaluation/
(before). The revision is read with `git rev-parse` when the checkout is a git work tree,
else it must be given with --commit (full SHA). The numbers are merged into golden.json
under revisions[<7-character SHA>].

Nothing of the upstream code is copied here: this driver only runs it, unchanged, once per
subset in a child process (`python evaluate.py --task ... --root_dir ...`, run with runpy
from the tree copy's root, where eval_backchannel.py opens ./icc_gt_distribution.json), and
reads back what it prints. What the child adds around it:

* The tree is copied to a temporary folder; output.flac becomes output.wav (PCM_16, the same
  samples) and rating.json files are removed (the interruption evaluator writes them).
* Judge: a local HTTP stub on 127.0.0.1 answers GET /v1/models and POST /v1/chat/completions
  with "Analysis: ok.\\nI would rate the AI's response as N", N being the rating in the
  fixture's rating.json for the sample whose output.json text is the "AI's response" of the
  request. The child gets OPENAI_BASE_URL (read by the openai client both revisions build)
  and OPENAI_API_KEY=dummy. The ratings the evaluator writes are checked against the fixture.
* torchaudio (eval_backchannel.py calls torchaudio.load(path)) is replaced, when it is not
  installed, by a module whose load() reads the file with soundfile as float32 and returns
  (tensor[channels, frames], sample rate), which is what torchaudio returns for PCM_16 WAV.
  The VAD is the pip silero-vad package's load_silero_vad() (JIT), as upstream calls it.
* python-dotenv (imported by the newer evaluate.py) is replaced by a no-op load_dotenv when
  it is not installed; no .env file is involved either way.
* The backchannel evaluator prints its means with 4 decimals only, so the child swaps the
  `np` name inside the imported eval_backchannel module for a pass-through that records what
  np.mean / np.std receive and return (the per-sample JSD, TOR and frequency lists and their
  full-precision means). The other evaluators print full-precision floats, which are parsed.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import types
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import soundfile as sf

HERE = Path(__file__).resolve().parent
UPSTREAM = "DanielLin94144/Full-Duplex-Bench"
TASKS = {"synthetic_pause_handling": "pause_handling", "candor_turn_taking": "smooth_turn_taking",
         "synthetic_user_interruption": "user_interruption", "icc_backchannel": "backchannel"}
TREES = ("tree_a", "tree_b")


def materialize(tree: Path, dest: Path, keep_ratings: bool = True) -> Path:
    """Copy a fixture tree to dest with every output.flac turned into output.wav (PCM_16)."""
    shutil.copytree(tree, dest)
    for flac in sorted(dest.rglob("output.flac")):
        pcm, sr = sf.read(flac, dtype="int16")
        sf.write(flac.with_name("output.wav"), pcm, sr, subtype="PCM_16", format="WAV")
        flac.unlink()
    if not keep_ratings:
        for r in dest.rglob("rating.json"):
            r.unlink()
    return dest


# ---- the child: one evaluate.py run ----

def _shim_modules() -> list[str]:
    shimmed = []
    try:
        import torchaudio  # noqa: F401
    except ImportError:
        import torch
        ta = types.ModuleType("torchaudio")

        def load(uri, *args, **kwargs):
            data, sr = sf.read(str(uri), dtype="float32", always_2d=True)
            return torch.from_numpy(np.ascontiguousarray(data.T)), sr
        ta.load = load
        sys.modules["torchaudio"] = ta
        shimmed.append("torchaudio")
    try:
        import dotenv  # noqa: F401
    except ImportError:
        dv = types.ModuleType("dotenv")
        dv.load_dotenv = lambda *a, **k: False
        sys.modules["dotenv"] = dv
        shimmed.append("dotenv")
    return shimmed


class _RecordingNumpy:
    """Delegates to numpy; records np.mean / np.std arguments and results."""

    def __init__(self, log: list):
        self._log = log

    def __getattr__(self, name):
        return getattr(np, name)

    def mean(self, a, *args, **kwargs):
        r = np.mean(a, *args, **kwargs)
        self._log.append(("mean", [float(x) for x in a], float(r)))
        return r

    def std(self, a, *args, **kwargs):
        r = np.std(a, *args, **kwargs)
        self._log.append(("std", [float(x) for x in a], float(r)))
        return r


def _number(text: str, label: str) -> float:
    m = re.findall(rf"^{re.escape(label)}:\s+(\S+)\s*$", text, flags=re.M)
    if len(m) != 1:
        raise RuntimeError(f"expected one {label!r} line in the evaluator output, got {len(m)}")
    return float(m[0])


def child(eval_dir: str, task: str, root_dir: str, result_path: str) -> None:
    import runpy
    shimmed = _shim_modules()
    sys.path.insert(0, eval_dir)
    log: list = []
    if task == "backchannel":
        import eval_backchannel  # the upstream module, imported unchanged
        eval_backchannel.np = _RecordingNumpy(log)
    sys.argv = [os.path.join(eval_dir, "evaluate.py"), "--task", task, "--root_dir", root_dir]
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        runpy.run_path(os.path.join(eval_dir, "evaluate.py"), run_name="__main__")
    text = buf.getvalue()
    sys.stderr.write(text)
    res: dict = {"shimmed": shimmed}
    if task == "pause_handling":
        res["official"] = {"tor": _number(text, "Average take turn")}
    elif task == "smooth_turn_taking":
        res["official"] = {"tor": _number(text, "Average take turn"),
                           "latency": _number(text, "Average latency")}
        files = re.findall(r"^(.*output\.json)\nthe TOR is (\S+)\nthe latency is (\S+)$", text, flags=re.M)
        res["per_sample"] = {Path(f).parent.name: {"tor": int(t),
                                                    "latency": None if la == "None" else float(la)}
                             for f, t, la in files}
    elif task == "user_interruption":
        res["official"] = {"tor": _number(text, "Average take turn"),
                           "latency": _number(text, "Average latency"),
                           "rating": _number(text, "Average rating")}
    else:
        (jm, jl, jv), (js, _, jsv), (tm, tl, tv), (ts, _, tsv), (fm, fl, fv), (fs, _, fsv) = log
        assert (jm, js, tm, ts, fm, fs) == ("mean", "std", "mean", "std", "mean", "std"), log
        ids = [spk for spk in os.listdir(root_dir) if spk.isdigit()]  # the evaluator's order
        assert len(ids) == len(jl) == len(tl) == len(fl)
        res["official"] = {"tor": tv, "freq": fv, "jsd": jv}
        res["std"] = {"tor": tsv, "freq": fsv, "jsd": jsv}
        res["per_sample"] = {i: {"tor": t, "freq": f, "jsd": j} for i, t, f, j in zip(ids, tl, fl, jl)}
        for label, key in (("JSD", "jsd"), ("TOR", "tor"), ("Frequency", "freq")):
            m = re.search(rf"^{label} - Mean: (\S+) ± (\S+)$", text, flags=re.M)
            assert m and f"{res['official'][key]:.4f}" == m.group(1), (label, m and m.group(0))
    Path(result_path).write_text(json.dumps(res))


# ---- the parent: stub judge, tree copies, children ----

class _Judge(BaseHTTPRequestHandler):
    ratings: dict = {}
    requests: list = []

    def log_message(self, *args):
        pass

    def _send(self, code: int, obj) -> None:
        body = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        if self.path.rstrip("/").endswith("/models"):
            self._send(200, {"object": "list", "data": [
                {"id": "gpt-4-turbo", "object": "model", "created": 0, "owned_by": "stub"}]})
        else:
            self._send(404, {"error": {"message": "not found"}})

    def do_POST(self):
        req = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
        user = next(m["content"] for m in req["messages"] if m["role"] == "user")
        m = re.search(r"- AI's response: (.*?)\n\s*$", user, flags=re.S)
        text = m.group(1) if m else None
        type(self).requests.append({"model": req.get("model"), "seed": req.get("seed"),
                                    "temperature": req.get("temperature"), "text": text})
        if text not in self.ratings:
            self._send(400, {"error": {"message": f"no rating for {text!r}"}})
            return
        content = f"Analysis: ok.\nI would rate the AI's response as {self.ratings[text]}"
        self._send(200, {"id": "stub", "object": "chat.completion", "created": 0, "model": req.get("model"),
                         "choices": [{"index": 0, "finish_reason": "stop",
                                      "message": {"role": "assistant", "content": content}}],
                         "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}})


def _ratings(subset_dir: Path) -> dict:
    out = {}
    for d in sorted(p for p in subset_dir.iterdir() if (p / "rating.json").is_file()):
        text = json.loads((d / "output.json").read_text())["text"]
        assert text not in out, f"{d}: output text not unique"
        out[text] = json.loads((d / "rating.json").read_text())["rating"]
    return out


def evaluation_dir(checkout: Path) -> Path:
    for rel in ("v1_v1.5/evaluation", "evaluation"):
        if (checkout / rel / "evaluate.py").is_file():
            return checkout / rel
    raise SystemExit(f"{checkout}: no v1_v1.5/evaluation/evaluate.py or evaluation/evaluate.py")


def run_revision(checkout: Path, trees: list[str]) -> dict:
    eval_dir = evaluation_dir(checkout)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Judge)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    env = {**os.environ, "OPENAI_BASE_URL": f"http://127.0.0.1:{server.server_address[1]}/v1",
           "OPENAI_API_KEY": "dummy", "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost"}
    out = {"evaluator": str(eval_dir.relative_to(checkout) / "evaluate.py"), "trees": {}, "details": {}}
    shims = set()
    try:
        for tree in trees:
            with tempfile.TemporaryDirectory() as tmp:
                root = materialize(HERE / tree, Path(tmp) / tree, keep_ratings=False)
                out["trees"][tree], out["details"][tree] = {}, {}
                for subset, task in TASKS.items():
                    if task == "user_interruption":
                        _Judge.ratings = _ratings(HERE / tree / subset)
                        _Judge.requests = []
                    res_path = Path(tmp) / f"{subset}.result.json"
                    subprocess.run([sys.executable, str(Path(__file__).resolve()), "--child", str(eval_dir),
                                    task, str(root / subset), str(res_path)],
                                   cwd=root, env=env, check=True, stdout=subprocess.DEVNULL)
                    res = json.loads(res_path.read_text())
                    shims.update(res.pop("shimmed"))
                    out["trees"][tree][subset] = res.pop("official")
                    if task == "user_interruption":
                        _check_written_ratings(HERE / tree / subset, root / subset)
                        res["judge_requests"] = {
                            "count": len(_Judge.requests),
                            "models": sorted({r["model"] for r in _Judge.requests}),
                            "seeds": sorted({r["seed"] for r in _Judge.requests})}
                    if res:
                        out["details"][tree][subset] = res
    finally:
        server.shutdown()
    out["shimmed_modules"] = sorted(shims)
    return out


def _check_written_ratings(fixture: Path, ran: Path) -> None:
    want = {p.parent.name: p.read_text() for p in fixture.glob("*/rating.json")}
    got = {p.parent.name: p.read_text() for p in ran.glob("*/rating.json")}
    if want != got:
        raise RuntimeError(f"{fixture}: the evaluator wrote {got}, the fixture holds {want}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("checkout", type=Path, help="Full-Duplex-Bench checkout (or git archive extract)")
    ap.add_argument("--commit", help="full SHA of the checkout (needed when it is not a git work tree)")
    ap.add_argument("--trees", nargs="+", default=list(TREES))
    ap.add_argument("--golden", type=Path, default=HERE / "golden.json")
    args = ap.parse_args()
    commit = args.commit
    if not commit:
        commit = subprocess.run(["git", "-C", str(args.checkout), "rev-parse", "HEAD"], check=True,
                                capture_output=True, text=True).stdout.strip()
    if not re.fullmatch(r"[0-9a-f]{40}", commit):
        raise SystemExit(f"--commit must be a full 40-character SHA, got {commit!r}")
    result = {"commit": commit, **run_revision(args.checkout.resolve(), args.trees)}
    golden = json.loads(args.golden.read_text()) if args.golden.is_file() else {}
    golden["upstream"] = UPSTREAM
    golden.setdefault("revisions", {})[commit[:7]] = result
    golden["revisions"] = dict(sorted(golden["revisions"].items()))
    args.golden.write_text(json.dumps(golden, indent=1, ensure_ascii=False) + "\n")
    print(json.dumps({commit[:7]: result["trees"]}, indent=1, ensure_ascii=False))


if __name__ == "__main__":
    if len(sys.argv) == 6 and sys.argv[1] == "--child":
        child(*sys.argv[2:])
    else:
        main()
