"""sample.json of an imported sample (tts-synth's import mode asks this `imported` hook): the v1.5
fields, read from the sample's metadata.json (checked when it was imported: importers.py), as the
built-in datasets write them (schemas/sample.schema.json of this package).

- `overlap`: `start`, `end` = metadata.json `timestamps` as given; `start_sample`, `end_sample` =
  round(time x input.wav's rate); `kind` and `speaker` from the task (tasks.KINDS, SPEAKERS);
  `text` = `current_turn_text`; `level_db`, `lowpass_hz` null (the release does not say);
- `context`: `text` = `context_text`; its times null (the release does not give them);
- `segments`: the overlap event alone (role `overlap`).
"""

from __future__ import annotations

import json
from pathlib import Path

from .schemas import SCHEMAS
from .tasks import KINDS, SPEAKERS


def sample_fields(folder: Path, task: str, doc: dict) -> dict:
    meta = json.loads((Path(folder) / "metadata.json").read_text(encoding="utf-8"))
    rate = int(doc["sample_rate"])
    start, end = (float(t) for t in meta["timestamps"][:2])
    speaker = SPEAKERS[task]
    doc["context"] = {"text": meta["context_text"], "start": None, "end": None,
                      "start_sample": None, "end_sample": None}
    doc["overlap"] = {"start": start, "end": end, "start_sample": int(round(start * rate)),
                      "end_sample": int(round(end * rate)), "kind": KINDS[task],
                      "text": meta["current_turn_text"], "speaker": speaker, "level_db": None,
                      "lowpass_hz": None}
    doc["segments"] = [{"speaker": speaker, "text": meta["current_turn_text"], "start": start, "end": end,
                        "role": "overlap"}]
    return SCHEMAS.validate("sample", doc, f"{doc.get('subset')}/{doc.get('id')}")
