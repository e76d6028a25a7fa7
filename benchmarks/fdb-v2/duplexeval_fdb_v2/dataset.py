"""The dataset stage of fdb-v2 (the `dataset` hook, run by tts-synth): one sample per task of the
dataset folder's tasks.json, subset and task = the task's kind, id = the task's id. Nothing is
synthesized: the examiner speaks during the live session (the runner core), so a sample is

    samples/<kind>/<task id>/live.json     the session (live.py)
    samples/<kind>/<task id>/sample.json   schema "sample": no segments (nothing is spoken yet)

and finalize writes manifest.json. With the dataset option `epochs` K > 1 each task is K samples:
`<task id>` and `<task id>.e2` ... `<task id>.eK`, the k-th with `"seed": k - 1` in its live.json
(the runner core adds it to the stage's seed, for the examiner and the model) and `task_id` and
`epoch` in its sample.json (the scorer's spread over epochs). `limit` keeps the first N tasks of each kind (in the file's
order), `subsets` only those kinds, `samples` only those keys, as every builder does
(duplexeval_common.script_stage).

A folder imported from upstream's task file (`duplexeval import fdb-v2 FILE`, importers.py) is
read the same way: its import manifest says `build: "dataset"` (so tts-synth runs this hook on it,
not its import mode) and holds tasks.json's sha256, checked here first (a copy changed since the
import is refused: import it again). Its tasks script no lines (no opening, no say: the examiner's
LLM says them), and each sample.json gets `source`, upstream's fields of the task (its id among
them).

The session length written here is live.DEFAULT_DURATION_S: the benchmark's `duration_s` option
reaches the runner core through the examiner's args instead (plan.py says why), and the runner
core's session length overrides this one.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from duplexeval_common import script_stage
from duplexeval_common.errors import DuplexEvalError, SampleError
from duplexeval_common.hashing import sha256_json
from duplexeval_common.jsonio import read_json
from duplexeval_common.samples import Inputs, Sample
from duplexeval_common.stage import SampleContext, StageContext

from .live import DEFAULT_DURATION_S, check_live, live_json
from .tasks import TASK_FILE, TASKS, LiveTask, load_tasks

MAX_EPOCHS = 20
IMPORT_MANIFEST = "manifest.json"            # an imported folder's (the orchestrator's importing.MANIFEST,
IMPORT_FORMAT = "duplexeval-import/1"        # and importing.FORMAT)


class _Kind:
    """The tasks of one kind, as script_stage sees a script (subset, task, entries, sha256)."""

    def __init__(self, kind: str, tasks: list[LiveTask], sha256: str):
        self.subset, self.task, self.entries, self.sha256 = kind, kind, tasks, sha256


class LiveDataset:
    def __init__(self, config: dict, synth):
        self.synth = synth
        self.cfg = synth.check_config(config)
        options = dict(self.cfg["options"] or {})
        self.epochs = options.pop("epochs", 1)
        if options:
            raise DuplexEvalError(f"fdb-v2 dataset: unknown dataset options {', '.join(sorted(options))} (known: epochs)")
        if isinstance(self.epochs, bool) or not isinstance(self.epochs, int) or not 1 <= self.epochs <= MAX_EPOCHS:
            raise DuplexEvalError(f"fdb-v2 dataset: epochs must be a whole number in [1, {MAX_EPOCHS}], got {self.epochs!r}")
        self.kinds: dict[str, _Kind] = {}
        self.samples: list[Sample] = []
        self.duration_s = DEFAULT_DURATION_S

    def select(self, inputs: Inputs, _config: dict) -> list[Sample]:
        folder = script_stage.script_folder(inputs, "benchmarks/fdb-v2/datasets/fdb-v2-mini")
        check_import(folder)
        tasks = load_tasks(folder)
        self.cfg["dataset"] = self.cfg["dataset"] or folder.name
        self.sha256 = sha256_json(read_json(folder / TASK_FILE))
        by_kind = {k: [t for t in tasks.values() if t.kind == k] for k in TASKS}
        self.kinds = {k: _Kind(k, ts, sha256_json([t.id for t in ts])) for k, ts in by_kind.items() if ts}
        self.kinds = script_stage.keep_subsets(self.kinds, self.cfg["subsets"])
        # script_stage names samples by index; ours are named by task id
        ordinal = script_stage.script_samples(self.kinds, self.cfg["limit"], None)
        self.samples = [Sample(s.subset, epoch_id(self.kinds[s.subset].entries[int(s.id)].id, k), s.task)
                        for s in ordinal for k in range(1, self.epochs + 1)]
        if self.cfg["samples"] is not None:
            keys = set(self.cfg["samples"])
            script_stage.check_known(keys, {s.key for s in self.samples})
            self.samples = [s for s in self.samples if s.key in keys]
        return self.samples

    def task(self, sample: Sample) -> tuple[LiveTask, int]:
        """The sample's task and epoch (1-based)."""
        for t in self.kinds[sample.subset].entries:
            for k in range(1, self.epochs + 1):
                if epoch_id(t.id, k) == sample.id:
                    return t, k
        raise KeyError(sample.key)

    def process(self, ctx: SampleContext) -> None:
        (task, epoch), rate = self.task(ctx.sample), self.cfg["sample_rate"]
        live = live_json(task, self.duration_s, rate, seed=epoch - 1)
        problems = check_live(live, "live.json")
        if problems:
            raise SampleError(ctx.id, problems[0])
        ctx.write_json("live.json", live)
        ctx.write_json("sample.json", {
            "dataset": self.cfg["dataset"], "subset": ctx.sample.subset, "id": ctx.sample.id,
            "task": task.kind, "duration_s": live["duration_s"], "sample_rate": rate, "segments": [],
            **({"source": task.source} if task.source else {}),
            **({"task_id": task.id, "epoch": epoch} if self.epochs > 1 else {})}, "sample")

    def finalize(self, sctx: StageContext) -> None:
        rows = []
        for s, folder in script_stage.each_built(self.samples, sctx, rows):
            rows.append({"subset": s.subset, "id": s.id, "task": s.task,
                         "duration_s": float(read_json(folder / "sample.json")["duration_s"]),
                         "files": self.synth.sample_files(folder)})
        sctx.write_json("manifest.json", {"dataset": self.cfg["dataset"], "version": self.sha256[:16],
                                          "samples": rows}, "manifest")


def epoch_id(task_id: str, epoch: int) -> str:
    """The sample id of a task's epoch: the task's id for the first, `<id>.e<k>` for the k-th."""
    return task_id if epoch == 1 else f"{task_id}.e{epoch}"


def check_import(folder: Path) -> None:
    """An imported folder's root files (tasks.json) as its import manifest hashed them; a plain
    script folder (no manifest.json) passes."""
    p = Path(folder) / IMPORT_MANIFEST
    if not p.is_file():
        return
    try:
        doc = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise DuplexEvalError(f"{p}: not readable ({exc}); import the dataset again") from None
    if not isinstance(doc, dict) or doc.get("format") != IMPORT_FORMAT:
        return  # not an import's manifest
    roots = doc.get("root_files")
    if not isinstance(roots, dict) or TASK_FILE not in roots:
        raise DuplexEvalError(f"{p}: does not hash {TASK_FILE} (not a fdb-v2 import?); import the dataset again")
    for name, digest in sorted(roots.items()):
        f = Path(folder) / str(name)
        got = hashlib.sha256(f.read_bytes()).hexdigest() if f.is_file() and not f.is_symlink() else None
        if got != digest:
            raise DuplexEvalError(f"{f} is missing or differs from the import manifest (sha256 "
                                  f"{(got or 'none')[:12]}, recorded {str(digest)[:12]}): the imported copy "
                                  "was changed; import the dataset again")


def make_stage(config: dict, synth) -> LiveDataset:
    """The dataset stage's hooks for a folder holding a fdb-v2 tasks.json (synth: tts-synth's
    Synth service; only its settings check and manifest file hashes are used)."""
    return LiveDataset(config, synth)
