"""A tiny component used by the stage-contract tests: it halves input.wav.

Run as `python toy_stage.py run --input ... --output ... [--config ...]`.
With config {"slow": s} it sleeps s seconds per sample, so a test can kill it
midway; {"fail": "<subset>/<id>"} makes that one sample raise.
"""

import sys
import time

import click

from duplexeval_common.cli import run_command
from duplexeval_common.errors import DuplexEvalError
from duplexeval_common.stage import Stage


def process(ctx):
    audio, sr = ctx.read_wav("input.wav")
    if ctx.config.get("fail") == ctx.id:
        raise RuntimeError("boom")
    time.sleep(ctx.config.get("slow", 0))
    ctx.write_wav("output.wav", audio * 0.5, sr)
    ctx.write_json("info.json", {"n": len(audio), "sr": sr})


def setup(config):
    # Stands for a model load; {"setup_fails": true} makes it fail like a missing model.
    if config.get("setup_fails"):
        raise DuplexEvalError("model not available: pip install toy-model")
    # {"hold_mib": n}: this process holds n MiB while it runs (pages touched);
    # {"child_mib": m}: a child process held m MiB and ended (the record's peak of children)
    global _held
    if config.get("hold_mib"):
        import numpy as np
        _held = np.ones(int(config["hold_mib"]) << 17)  # float64: 2**17 per MiB
    if config.get("child_mib"):
        import subprocess
        subprocess.run([sys.executable, "-c", f"b = bytearray({int(config['child_mib'])} << 20); b[::4096] = b'x' * len(b[::4096])"],
                       check=True)


_held = None


def finalize(sctx):
    sctx.write_json("summary.json", {"ok": [s.key for s in sctx.ok_samples()]})


@click.group()
def main():
    pass


main.add_command(run_command(lambda cfg: Stage("toy", "0.0.1", process, finalize=finalize, setup=setup)))

if __name__ == "__main__":
    sys.exit(main())
