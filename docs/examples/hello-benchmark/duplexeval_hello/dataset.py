"""The dataset builder (tts-synth runs it): each script line spoken by tts-synth's default voice,
then `silence_after_s` of silence; sample.json says where the user's turn ends (to the sample)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from duplexeval_common.errors import DuplexEvalError
from duplexeval_common.samples import Inputs, Sample


class HelloDataset:
    def __init__(self, config: dict, synth):
        self.synth, self.cfg = synth, synth.check_config(config)

    def select(self, inputs: Inputs, _config: dict) -> list[Sample]:
        self.scripts = {}
        for path in sorted(Path(inputs.dirs[0]).glob("*.json")):
            doc = json.loads(path.read_text())
            if doc.get("format") != "hello-script/1":
                raise DuplexEvalError(f"{path.name}: format must be hello-script/1")
            self.scripts[path.stem] = doc
        limit = self.cfg["limit"]
        return [Sample(subset, str(i), doc["task"]) for subset, doc in sorted(self.scripts.items())
                for i in range(len(doc["samples"]) if limit is None else min(limit, len(doc["samples"])))]

    def setup(self, _config: dict) -> None:
        self.engine = self.synth.engine(self.cfg["engine"], self.cfg["voice"])

    def process(self, ctx) -> None:
        doc = self.scripts[ctx.sample.subset]
        rate = self.cfg["sample_rate"]
        speech = self.synth.render(self.engine, doc["samples"][int(ctx.sample.id)], rate)
        audio = np.concatenate([np.zeros(rate // 2, np.float32), speech,
                                np.zeros(int(doc["silence_after_s"] * rate), np.float32)])
        ctx.write_wav("input.wav", audio, rate)
        ctx.write_json("sample.json", {
            "dataset": self.cfg["dataset"], "subset": ctx.sample.subset, "id": ctx.sample.id,
            "task": ctx.sample.task, "duration_s": len(audio) / rate, "sample_rate": rate,
            "turn_end_s": (rate // 2 + len(speech)) / rate,
            "segments": [{"speaker": "user", "text": doc["samples"][int(ctx.sample.id)],
                          "start": 0.5, "end": (rate // 2 + len(speech)) / rate}]}, "sample")

    def finalize(self, sctx) -> None:
        rows = []
        for s in self._selected(sctx):
            st = sctx.statuses.get(s.key, {})
            folder = sctx.output / "samples" / s.subset / s.id
            if st.get("status") == "ok":
                duration = json.loads((folder / "sample.json").read_text())["duration_s"]
                rows.append({"subset": s.subset, "id": s.id, "task": s.task, "duration_s": duration,
                             "files": self.synth.sample_files(folder)})
            else:
                rows.append({"subset": s.subset, "id": s.id, "task": s.task, "status": "failed",
                             "reason": st.get("reason", "not built")})
        sctx.write_json("manifest.json", {"dataset": self.cfg["dataset"], "samples": rows}, "manifest")

    def _selected(self, sctx) -> list[Sample]:
        keys = sorted(sctx.statuses, key=lambda k: (k.split("/")[0], int(k.split("/")[1])))
        return [Sample(*k.split("/"), self.scripts[k.split("/")[0]]["task"]) for k in keys]


def make_stage(config: dict, synth) -> HelloDataset:
    return HelloDataset(config, synth)
