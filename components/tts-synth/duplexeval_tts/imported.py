"""The dataset stage in import mode: an imported dataset (`duplexeval import`) as stage output.

The input folder is what `duplexeval import` wrote: <subset>/<id>/<file> in the official layout,
icc_gt_distribution.json when there is one, and manifest.json of format FORMAT listing each
sample's files with their sha256. Each selected sample's files are copied into the stage output
after their sha256 is checked against that manifest: a file changed (or removed) since the import
fails that sample with its reason, and the other samples go on. Each sample also gets sample.json
(schemas/sample.schema.json) filled from its annotation, and the stage writes manifest.json
(schemas/manifest.schema.json) and, when the import has one, icc_gt_distribution.json (also
checked against the import's sha256) as root files.

The orchestrator hashes the whole input folder into the stage key (a Source), so an import
replaced under the same name never reuses an old stage.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path

from duplexeval_common.errors import DuplexEvalError, SampleError
from duplexeval_common.hashing import sha256_file, sha256_json
from duplexeval_common.jsonio import atomic_write_bytes
from duplexeval_common.progress import log
from duplexeval_common.samples import SAMPLES, Inputs, Sample, check_name, inside, task_of
from duplexeval_common.stage import SampleContext, Stage, StageContext

from . import __version__
from .dataset import sample_files

FORMAT = "duplexeval-import/1"
MANIFEST = "manifest.json"
ICC_GT = "icc_gt_distribution.json"
SETTINGS = ("dataset", "limit", "jobs", "subsets")  # the others (engine, voice, ...) are about synthesis
ANNOTATION = {"pause_handling": "pause.json", "smooth_turn_taking": "turn_taking.json",
              "user_interruption": "interrupt.json"}


def import_manifest(folder: Path) -> dict | None:
    """The import manifest of a folder, or None when the folder holds none (a script folder)."""
    p = Path(folder) / MANIFEST
    if not p.is_file():
        return None
    try:
        doc = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) and doc.get("format") == FORMAT else None


def is_import(dirs: list[Path]) -> bool:
    return len(dirs) == 1 and import_manifest(dirs[0]) is not None


class ImportedStage:
    """select / setup / process / finalize of the dataset stage for an imported dataset."""

    def __init__(self, config: dict):
        defaults = {"engine": "piper", "voice": None, "sample_rate": 16000, "timing": {}}
        for k, v in config.items():
            if k not in SETTINGS and v not in (None, defaults.get(k)):
                raise DuplexEvalError(f"setting {k} does not apply to an imported dataset (its audio "
                                      "is used as imported)")
        self.config = config
        self.root: Path | None = None
        self.manifest: dict = {}
        self.rows: dict[str, dict] = {}
        self.samples: list[Sample] = []

    def select(self, inputs: Inputs, _config: dict) -> list[Sample]:
        self.root = inputs.dirs[0]
        self.manifest = import_manifest(self.root) or {}
        rows = self.manifest.get("samples")
        if not isinstance(rows, list):
            raise DuplexEvalError(f"{self.root / MANIFEST}: has no samples list")
        chosen: dict[str, list[Sample]] = {}
        for i, r in enumerate(rows):
            if not isinstance(r, dict) or not isinstance(r.get("files"), dict):
                raise DuplexEvalError(f"{self.root / MANIFEST}: sample row {i} has no files")
            s = Sample(r.get("subset"), r.get("id"))
            if s.key in self.rows:
                raise DuplexEvalError(f"{self.root / MANIFEST}: duplicate sample {s.key}")
            task_of(s.subset)  # a subset without a known task is a one-line error here
            self.rows[s.key] = r
            chosen.setdefault(s.subset, []).append(s)
        from .scripts import select_subsets
        keep = select_subsets(list(chosen), self.config.get("subsets"), "tts-synth (imported dataset)")
        chosen = {k: v for k, v in chosen.items() if k in keep}
        limit = self.config.get("limit")
        self.samples = sorted((s for ss in chosen.values() for s in self._first(ss, limit)), key=Sample.sort_key)
        return self.samples

    def _first(self, samples: list[Sample], limit: int | None) -> list[Sample]:
        """The first `limit` samples of a subset; for MTR rows, the first `limit` dialogues with
        every sample of each (a round sample `<dialogue>-r<kk>` belongs to its dialogue), as the
        built-in MTR datasets count them (mtr_build.py)."""
        ordered = sorted(samples, key=Sample.sort_key)
        if limit is None:
            return ordered
        if not any(self.rows[s.key].get("mtr") for s in ordered):
            return ordered[:limit]
        from .mtr_build import dialogue_of
        dialogues: list[str] = []
        for s in ordered:
            d = dialogue_of(s.id) if self.rows[s.key].get("mtr") == "round" else s.id
            if d not in dialogues:
                dialogues.append(d)
        keep = set(dialogues[:limit])
        return [s for s in ordered
                if (dialogue_of(s.id) if self.rows[s.key].get("mtr") == "round" else s.id) in keep]

    def setup(self, _config: dict) -> None:
        pass  # nothing to load: the audio is imported

    def process(self, ctx: SampleContext) -> None:
        row = self.rows[ctx.sample.key]
        src = self.root / ctx.sample.subset / ctx.sample.id
        for name, digest in sorted(row["files"].items()):
            check_name(name, f"{ctx.id}: file name")
            p = src / name
            if not p.is_file():
                raise SampleError(ctx.id, f"{name} is missing from the imported dataset {self.root}; "
                                          "import it again")
            if not inside(self.root, p):
                raise SampleError(ctx.id, f"{name} is a link leading out of the imported dataset")
            data = p.read_bytes()
            got = hashlib.sha256(data).hexdigest()
            if got != digest:
                raise SampleError(ctx.id, f"{name} differs from the import manifest (sha256 {got[:12]}, "
                                          f"recorded {str(digest)[:12]}): the imported copy was changed; "
                                          "import it again")
            atomic_write_bytes(ctx.work / name, data)
            ctx.written.append(name)
        if row.get("mtr"):  # an MTR round or dialogue: round.json / dialogue.json is its annotation
            return
        ctx.write_json("sample.json", self._sample_json(ctx, row), "sample")

    def _sample_json(self, ctx: SampleContext, row: dict) -> dict:
        import soundfile as sf
        info = sf.info(str(ctx.work / "input.wav"))
        task = ctx.sample.task
        doc = {"dataset": self.config.get("dataset") or self.manifest.get("name", ""),
               "subset": ctx.sample.subset, "id": ctx.sample.id, "task": task,
               "duration_s": info.frames / info.samplerate, "sample_rate": info.samplerate,
               "segments": [], "imported": {"source": self.manifest.get("source"),
                                            "files": dict(sorted(row["files"].items()))}}
        ann = ANNOTATION.get(task)
        if ann is None:
            return doc
        items = json.loads((ctx.work / ann).read_text(encoding="utf-8"))
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

    def finalize(self, sctx: StageContext) -> None:
        rows = []
        for s in self.samples:
            status = sctx.statuses.get(s.key, {})
            if status.get("status") != "ok":
                rows.append({"subset": s.subset, "id": s.id, "task": s.task, "status": "failed",
                             "reason": status.get("reason", "not copied")})
                continue
            folder = sctx.output / SAMPLES / s.subset / s.id
            files = sample_files(folder)
            mtr = {"mtr": self.rows[s.key]["mtr"]} if self.rows[s.key].get("mtr") else {}
            rows.append({"subset": s.subset, "id": s.id, "task": s.task,
                         "duration_s": self.rows[s.key].get("duration_s") or _duration(folder / "input.wav"),
                         "files": files, **mtr})
        gt_sha = self.manifest.get("icc_gt_sha256")
        if gt_sha:
            data = (self.root / ICC_GT).read_bytes() if (self.root / ICC_GT).is_file() else None
            if data is None or hashlib.sha256(data).hexdigest() != gt_sha:
                raise DuplexEvalError(f"{self.root / ICC_GT} is missing or differs from the import manifest; "
                                      "import the dataset again")
            atomic_write_bytes(sctx.output / ICC_GT, data)
        manifest = {
            "dataset": self.config.get("dataset") or self.manifest.get("name", ""),
            "version": sha256_json(self.manifest)[:16],
            "source": {"generator": "tts-synth", "generator_version": __version__, "mode": "imported",
                       "imported": {k: self.manifest.get(k) for k in
                                    ("name", "source", "source_path", "created_by", "icc_gt_sha256")},
                       "import_manifest_sha256": sha256_file(self.root / MANIFEST),
                       "settings": {"limit": self.config.get("limit")}},
            "samples": rows,
        }
        sctx.write_json(MANIFEST, manifest, "manifest")
        failed = sum(r.get("status") == "failed" for r in rows)
        log(f"[tts-synth] imported dataset: {len(rows) - failed} samples copied"
            + (f", {failed} failed" if failed else ""))


def _duration(wav: Path) -> float:
    import soundfile as sf
    info = sf.info(str(wav))
    return info.frames / info.samplerate


class Chooser:
    """The dataset stage's hooks, chosen by the input folder at `select`: ImportedStage's when it
    holds an import manifest, else the scripted stage's (dataset.py)."""

    def __init__(self, config: dict, scripted: Stage):
        self.config, self.scripted = config, scripted
        self.imported: ImportedStage | None = None

    def select(self, inputs: Inputs, config: dict) -> list[Sample]:
        if is_import(inputs.dirs):
            self.imported = ImportedStage(self.config)
            return self.imported.select(inputs, config)
        return self.scripted.select(inputs, config) if self.scripted.select else inputs.samples()

    def setup(self, config: dict) -> None:
        if self.imported is not None:
            self.imported.setup(config)
        elif self.scripted.setup:
            self.scripted.setup(config)

    def process(self, ctx: SampleContext) -> None:
        (self.imported.process if self.imported is not None else self.scripted.process)(ctx)

    def finalize(self, sctx: StageContext) -> None:
        if self.imported is not None:
            self.imported.finalize(sctx)
        elif self.scripted.finalize:
            self.scripted.finalize(sctx)


def with_import_mode(scripted: Stage, config: dict) -> Stage:
    """The scripted stage (whatever its settings: workers, check) with its hooks switched to the
    import mode when the input folder holds an import manifest."""
    chooser = Chooser(config, scripted)
    return dataclasses.replace(scripted, select=chooser.select, setup=chooser.setup,
                               process=chooser.process, finalize=chooser.finalize)
