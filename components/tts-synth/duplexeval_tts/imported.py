"""The dataset stage in import mode: an imported dataset (`duplexeval import`) as stage output.

The input folder is what a benchmark's importer wrote: <subset>/<id>/<file> in its layout, its
root files (e.g. Full-Duplex-Bench's icc_gt_distribution.json), and manifest.json of format FORMAT listing each
sample's files with their sha256 and its task (and, for samples that belong together, `group`:
`limit` counts groups, e.g. the dialogue of a round sample, and `kind`). Each selected sample's
files are copied into the stage output after their sha256 is checked against that manifest: a file
changed (or removed) since the import fails that sample with its reason, and the other samples go
on. A sample of `kind` "sample" (the default) also gets sample.json (schemas/sample.schema.json),
whose task-specific fields the benchmark's `imported` hook fills from the sample's annotation; the
stage writes manifest.json (schemas/manifest.schema.json) and copies the import's root files
(each checked against the import's sha256).

An import whose manifest says `"build": "dataset"` is not copied here: its root files are a
script folder for the benchmark's own `dataset` hook (e.g. fdb-v2's tasks.json imported from
upstream's task file), which builds the samples and checks those files against the manifest.

The orchestrator hashes the whole input folder into the stage key (a Source), so an import
replaced under the same name never reuses an old stage.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from duplexeval_common.errors import DuplexEvalError, SampleError
from duplexeval_common.hashing import sha256_file, sha256_json
from duplexeval_common.jsonio import atomic_write_bytes
from duplexeval_common.progress import log
from duplexeval_common import benchmarks, script_stage
from duplexeval_common.samples import SAMPLES, Inputs, Sample, check_name, inside, select_subsets
from duplexeval_common.stage import SampleContext, StageContext

from . import __version__
from .synth import sample_files

FORMAT = "duplexeval-import/1"
MANIFEST = "manifest.json"
SETTINGS = ("benchmark", "dataset", "limit", "jobs", "subsets", "options")  # the others (engine, voice, ...) are about synthesis
ROW_FIELDS = ("kind", "group")  # carried from the import's rows into the stage's manifest


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


BUILD_BY_HOOK = "dataset"   # manifest `build`: the benchmark's dataset hook builds the samples


def is_import(dirs: list[Path]) -> bool:
    """One input folder holding an import that is copied as it is (import mode)."""
    doc = import_manifest(dirs[0]) if len(dirs) == 1 else None
    return doc is not None and doc.get("build") != BUILD_BY_HOOK


class ImportedStage:
    """select / setup / process / finalize of the dataset stage for an imported dataset."""

    def __init__(self, config: dict):
        defaults = {"engine": "piper", "voice": None, "sample_rate": 16000, "timing": {}}
        for k, v in config.items():
            if k not in SETTINGS and v not in (None, defaults.get(k)):
                raise DuplexEvalError(f"setting {k} does not apply to an imported dataset (its audio "
                                      "is used as imported)")
        self.config = config
        self.bench = benchmarks.of_config(config, "tts-synth")
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
            s = Sample(r.get("subset"), r.get("id"), r.get("task"))
            if s.key in self.rows:
                raise DuplexEvalError(f"{self.root / MANIFEST}: duplicate sample {s.key}")
            if self.bench.task(s.task or "") is None:
                raise DuplexEvalError(f"{self.root / MANIFEST}: sample {s.key} has task {s.task!r}, not one of "
                                      f"benchmark {self.bench.name}'s ({', '.join(t.name for t in self.bench.tasks)})")
            self.rows[s.key] = r
            chosen.setdefault(s.subset, []).append(s)
        keep = select_subsets(list(chosen), self.config.get("subsets"), "tts-synth (imported dataset)")
        chosen = {k: v for k, v in chosen.items() if k in keep}
        limit = self.config.get("limit")
        self.samples = sorted((s for ss in chosen.values() for s in self._first(ss, limit)), key=Sample.sort_key)
        return self.samples

    def _first(self, samples: list[Sample], limit: int | None) -> list[Sample]:
        """The first `limit` samples of a subset, or, where rows name their `group` (the samples
        that belong together, e.g. the rounds of one dialogue), the first `limit` groups with every
        sample of each."""
        ordered = sorted(samples, key=Sample.sort_key)
        if limit is None:
            return ordered
        group = {s.key: str(self.rows[s.key].get("group") or s.id) for s in ordered}
        keep = list(dict.fromkeys(group[s.key] for s in ordered))[:limit]
        return [s for s in ordered if group[s.key] in keep]

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
        if row.get("kind", "sample") != "sample":  # e.g. a round or a dialogue: its own files annotate it
            return
        ctx.write_json("sample.json", self._sample_json(ctx, row), "sample")

    def _sample_json(self, ctx: SampleContext, row: dict) -> dict:
        import soundfile as sf
        info = sf.info(str(ctx.work / "input.wav"))
        doc = {"dataset": self.config.get("dataset") or self.manifest.get("name", ""),
               "subset": ctx.sample.subset, "id": ctx.sample.id, "task": ctx.sample.task,
               "duration_s": info.frames / info.samplerate, "sample_rate": info.samplerate,
               "segments": [], "imported": {"source": self.manifest.get("source"),
                                            "files": dict(sorted(row["files"].items()))}}
        if self.bench.has("imported"):  # the task's fields, from the sample's annotation
            doc = self.bench.hook("imported")(ctx.work, ctx.sample.task, doc)
        return doc

    def finalize(self, sctx: StageContext) -> None:
        rows = []
        for s in self.samples:
            status = sctx.statuses.get(s.key, {})
            if status.get("status") != "ok":
                rows.append(script_stage.failed_row(s, s.task, status, "not copied"))
                continue
            folder = sctx.output / SAMPLES / s.subset / s.id
            files = sample_files(folder)
            extra = {k: self.rows[s.key][k] for k in ROW_FIELDS if k in self.rows[s.key]}
            rows.append({"subset": s.subset, "id": s.id, "task": s.task,
                         "duration_s": self.rows[s.key].get("duration_s") or _duration(folder / "input.wav"),
                         "files": files, **extra})
        for name, digest in sorted((self.manifest.get("root_files") or {}).items()):
            check_name(name, f"{self.root / MANIFEST}: root file name")
            p = self.root / name
            data = p.read_bytes() if p.is_file() and inside(self.root, p) else None
            if data is None or hashlib.sha256(data).hexdigest() != digest:
                raise DuplexEvalError(f"{p} is missing or differs from the import manifest; "
                                      "import the dataset again")
            atomic_write_bytes(sctx.output / name, data)
        manifest = {
            "dataset": self.config.get("dataset") or self.manifest.get("name", ""),
            "version": sha256_json(self.manifest)[:16],
            "source": {"generator": "tts-synth", "generator_version": __version__, "mode": "imported",
                       "imported": {k: self.manifest.get(k) for k in
                                    ("benchmark", "name", "source", "source_path", "created_by", "root_files")},
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
