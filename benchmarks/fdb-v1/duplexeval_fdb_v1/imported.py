"""sample.json of an imported sample (tts-synth's import mode asks this `imported` hook): the
task's fields, read from the sample's official annotation, as the built-in datasets write them."""

from __future__ import annotations

import json
from pathlib import Path

ANNOTATION = {"pause_handling": "pause.json", "smooth_turn_taking": "turn_taking.json",
              "user_interruption": "interrupt.json"}


def sample_fields(folder: Path, task: str, doc: dict) -> dict:
    ann = ANNOTATION.get(task)
    if ann is None:
        return doc
    items = json.loads((Path(folder) / ann).read_text(encoding="utf-8"))
    if task == "pause_handling":
        doc["pauses"] = [list(it["timestamp"][:2]) for it in items]
    elif task == "smooth_turn_taking":
        doc["turn_end_s"] = items[0]["timestamp"][0]
    else:
        it = items[0]
        start, end = it["timestamp"][:2]
        doc["interrupt"] = {"start": start, "end": end, "context": it["context"], "interrupt": it["interrupt"]}
        doc["turn_end_s"] = end
        doc["segments"] = [{"speaker": "user", "text": it["interrupt"], "start": start, "end": end,
                            "role": "interrupt"}]
    return doc
