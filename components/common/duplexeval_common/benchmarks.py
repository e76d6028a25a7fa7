"""Benchmarks: packages found through the `duplexeval.benchmarks` entry points.

A benchmark is one Python package in its own folder (benchmarks/<name>/ of the repository, or
anywhere on the path): its declaration, a `Benchmark`, is the object its entry point names,

    [project.entry-points."duplexeval.benchmarks"]
    fdb-v1 = "duplexeval_fdb_v1:BENCHMARK"

and everything specific to it (datasets, task rules, plan, judge logic, scorer, report, schemas,
prompts) hangs off the declaration as *hooks*: names of `module:attr` inside the package, imported
only when a component asks for that hook. The declaration module itself imports nothing heavy.

The components are engines that know no benchmark by name: a stage's settings name the benchmark
(`"benchmark": "<name>"`), and the component asks this registry for that benchmark's hook:

    bench = benchmarks.get(config["benchmark"])
    score = bench.hook("score")          # e.g. the aggregator's scorer

The hooks a component may ask for, and what each receives, are listed in docs/adding-a-benchmark.md
(HOOKS below names them). A benchmark's source digest (`Benchmark.digest()`) is part of the identity
of every stage that names it, so changing one of its rules re-runs exactly that benchmark's stages.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

from .errors import DuplexEvalError
from .registry import Registry
from . import subset_tasks

GROUP = "duplexeval.benchmarks"

# The hooks a component or the orchestrator may ask a benchmark for (docs/adding-a-benchmark.md).
HOOKS = {
    "plan": "orchestrator: plan(planner, options) -> [stage specs]",
    "summary": "orchestrator: summary(metrics.json) -> run.json's summary",
    "missing": "orchestrator: missing(aggregate folder) -> {sample: why}",
    "report": "orchestrator: the HTML report of a run (a module with build(store, record, out))",
    "compare": "aggregator: paired comparison of two scored folders",
    "dataset": "tts-synth: the dataset stage of a built-in dataset (a stage builder)",
    "imported": "tts-synth: per-sample files of an imported dataset",
    "variants": "tts-synth: variants(ctx, options) adds inputs made from a sample's own (e.g. a counterfactual twin)",
    "importers": "orchestrator: {name: importer} for `duplexeval import NAME DIR`",
    "asr": "asr-aligner: which audio of a sample to transcribe, and where to start",
    "judge": "judge: the judge stage's task (which samples, the prompt fields, the records)",
    "prompts": "orchestrator (`duplexeval benchmarks`): the benchmark's versioned prompts (a PromptSet)",
    "segment": "turn-segmenter: the samples made from segmented dialogues",
    "score": "aggregator: score the stage's samples (aggregate stage)",
    "score_tree": "aggregator: score a tree made elsewhere (`make score`)",
}
_NAME = re.compile(r"^[a-z0-9][a-z0-9.-]{0,63}$")


@dataclass(frozen=True)
class Dataset:
    """A built-in dataset: its source folder (scripts), read by the dataset stage."""
    name: str
    path: Path
    summary: str
    component: str = "tts-synth"


@dataclass(frozen=True)
class Task:
    name: str
    summary: str = ""


def tasks_of(names: tuple[str, ...], summaries: Mapping[str, str]) -> tuple[Task, ...]:
    """A declaration's tasks: each name of a benchmark's TASKS with its summary."""
    return tuple(Task(t, summaries[t]) for t in names)


def datasets_beside(package_file: str, *datasets: tuple[str, str]) -> tuple[Dataset, ...]:
    """A declaration's built-in datasets, each (name, summary): the folder `datasets/<name>` beside
    the package whose module file is package_file (benchmarks/<benchmark>/datasets/)."""
    folder = Path(package_file).resolve().parent.parent / "datasets"
    return tuple(Dataset(name, folder / name, summary) for name, summary in datasets)


@dataclass(frozen=True)
class Headline:
    """A number a reader looks at first for a task: its column ("official" or "unified"), its
    name, which way is better (None: neither), and where it is in a subset's entry of metrics.json
    (`path`, default (column, metric)); the node there is a number, or an object with "value"
    (and "interval", "status")."""
    task: str
    column: str
    metric: str
    higher_is_better: bool | None
    path: tuple[str, ...] = ()

    def where(self) -> tuple[str, ...]:
        return self.path or (self.column, self.metric)

    def read(self, subset_metrics: dict) -> dict:
        """{"value", "interval", "status"} of this metric in a subset's entry (None where absent)."""
        node: Any = subset_metrics
        for key in self.where():
            node = node.get(key) if isinstance(node, dict) else None
        if isinstance(node, dict):
            return {"value": node.get("value"), "interval": node.get("interval"), "status": node.get("status")}
        return {"value": node, "interval": None, "status": None}


@dataclass(frozen=True)
class Option:
    """One of a benchmark's own settings (`--benchmark-arg NAME=VALUE`): its type, default,
    allowed values (choices or a [low, high] range) and a line of help."""
    name: str
    type: type
    default: Any = None
    help: str = ""
    choices: tuple | None = None
    low: float | None = None
    high: float | None = None

    def check(self, bench: str, value: Any) -> Any:
        where = f"benchmark {bench}: setting {self.name}"
        if value is None:
            return None
        if self.type is bool:
            if isinstance(value, str) and value.lower() in ("1", "true", "yes", "on", "0", "false", "no", "off"):
                value = value.lower() in ("1", "true", "yes", "on")
            if not isinstance(value, bool):
                raise DuplexEvalError(f"{where} must be true or false, got {value!r}")
        elif self.type in (int, float):
            if isinstance(value, str):
                try:
                    value = self.type(value)
                except ValueError:
                    raise DuplexEvalError(f"{where} must be a number, got {value!r}") from None
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value \
                    or value in (float("inf"), float("-inf")) or (self.type is int and not float(value).is_integer()):
                raise DuplexEvalError(f"{where} must be a{'n integer' if self.type is int else ' finite number'}, "
                                      f"got {value!r}")
            value = self.type(value)
            if (self.low is not None and value < self.low) or (self.high is not None and value > self.high):
                raise DuplexEvalError(f"{where} must lie in [{self.low}, {self.high}], got {value!r}")
        elif not isinstance(value, self.type):
            raise DuplexEvalError(f"{where} must be a {self.type.__name__}, got {value!r}")
        if self.choices is not None and value not in self.choices:
            raise DuplexEvalError(f"{where} must be one of {', '.join(map(str, self.choices))}, got {value!r}")
        return value


@dataclass(frozen=True)
class AsrTarget:
    """One audio file of a sample the asr-aligner transcribes (what a benchmark's `asr` hook
    returns, a list per sample): the file, the files it writes (the official ASR output, the
    word-timestamped transcript, the VAD record), and where listening starts: `offset` seconds
    into the file (0: the whole file; `what` names the offset in errors), with the VAD hearing the
    same crop when `vad_crop` (else the whole file)."""
    audio: str = "output.wav"
    official: str = "output.json"
    transcript: str = "transcript.json"
    vad: str = "vad.json"
    offset: float = 0.0
    what: str = ""
    vad_crop: bool = False


@dataclass(frozen=True)
class Importer:
    """One `duplexeval import NAME DIR` command of a benchmark (its `importers` hook: {name:
    Importer}): its summary (the command's help), the dataset name it writes by default (None:
    --name is required), its own options, and `run(service, directory, name, home, force, report,
    **options)` returning what it imported. The service is the orchestrator's import toolkit (the
    dataset folder, the manifest, the checks every importer shares; docs/adding-a-benchmark.md).
    `argument` names what the command reads in its help (a folder, or e.g. fdb-v2's one FILE)."""
    name: str
    summary: str
    run: Callable[..., Any]
    default_name: str | None = None
    options: tuple[Option, ...] = ()
    argument: str = "DIRECTORY"


@dataclass(frozen=True)
class Benchmark:
    """The declaration of a benchmark (see the module docstring)."""
    name: str
    title: str
    package: str                                  # the Python package holding the hooks
    datasets: tuple[Dataset, ...]
    default_dataset: str
    tasks: tuple[Task, ...]
    default_judge: str
    judges: tuple[str, ...]                       # the judges its judge stage accepts
    hooks: Mapping[str, str]                      # hook name -> "module:attr" (".mod" = in package)
    summary: str = ""
    # The task of a subset of a tree without a manifest (`make score`): (subset-name suffix, task).
    subset_tasks: tuple[tuple[str, str], ...] = ()
    options: tuple[Option, ...] = ()
    headline: tuple[Headline, ...] = ()
    components: tuple[str, ...] = ()              # the images its stages need besides the runner's
    judge_notes: Mapping[str, str] = field(default_factory=dict)  # judge -> a line printed with its numbers
    doc: str = "README.md"                        # its doc page, in the benchmark's folder
    default: bool = False                         # the benchmark `duplexeval eval` runs when none is named
    # The dataset options its `dataset` hook reads itself (p.dataset_stage(options=...)): the dataset
    # stage hands them to the builder, where options of no such name need a `variants` hook.
    dataset_options: tuple[str, ...] = ()

    # -- lookups -----------------------------------------------------------------------------

    def dataset(self, name: str) -> Dataset | None:
        return next((d for d in self.datasets if d.name == name), None)

    def task(self, name: str) -> Task | None:
        return next((t for t in self.tasks if t.name == name), None)

    def task_of(self, subset: str) -> str | None:
        """The task of a subset named as this benchmark's official layout names them, or None."""
        return subset_tasks.task_of(self.subset_tasks, subset)

    def headline_of(self, task: str | None) -> list[Headline]:
        return [h for h in self.headline if h.task == task]

    def hook(self, name: str) -> Any:
        """The object a hook names, imported now; a one-line error when the benchmark has none."""
        if name not in self.hooks:
            raise DuplexEvalError(f"benchmark {self.name} has no {name!r} hook "
                                  f"({HOOKS.get(name, 'unknown hook')})")
        return _resolve(self.package, self.hooks[name], f"benchmark {self.name}: hook {name}")

    def has(self, name: str) -> bool:
        return name in self.hooks

    # -- options -----------------------------------------------------------------------------

    def check_options(self, given: Mapping[str, Any] | None) -> dict:
        """The benchmark's settings: each given one checked, defaults for the others (one line
        for an unknown name or a bad value)."""
        given = dict(given or {})
        known = {o.name: o for o in self.options}
        unknown = sorted(set(given) - set(known))
        if unknown:
            raise DuplexEvalError(f"benchmark {self.name} has no setting {', '.join(unknown)} "
                                  f"(known: {', '.join(sorted(known)) or 'none'})")
        return {n: o.check(self.name, given[n]) if n in given else o.default for n, o in sorted(known.items())}

    # -- where it lives ------------------------------------------------------------------------

    @property
    def module_dir(self) -> Path:
        """The folder of the benchmark's Python package."""
        return _package_dir(self.package)

    @property
    def folder(self) -> Path:
        """The benchmark's folder: the one holding its package (benchmarks/<name>/)."""
        return self.module_dir.parent

    def resource(self, *parts: str) -> Path:
        """A file of the package (prompts, schemas, ...)."""
        return self.module_dir.joinpath(*parts)

    def digest(self) -> str:
        """sha256 of the package's source and data (its ``tests`` left out): part of the
        identity of its stages."""
        return _digest(str(self.module_dir))


@functools.lru_cache(maxsize=None)
def _digest(folder: str) -> str:
    from .hashing import sha256_tree
    return sha256_tree(Path(folder), exclude=("tests",))


def _package_dir(package: str) -> Path:
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise DuplexEvalError(f"benchmark package {package} is not importable")
    return Path(list(spec.submodule_search_locations)[0]).resolve()


def _resolve(package: str, target: str, what: str) -> Any:
    module, _, attr = target.partition(":")
    if module.startswith("."):
        module = package + module if module != "." else package
    try:
        mod = importlib.import_module(module)
    except ImportError as exc:
        raise DuplexEvalError(f"{what}: {module} cannot be imported ({exc.name or exc} missing)") from None
    try:
        return getattr(mod, attr) if attr else mod
    except AttributeError:
        raise DuplexEvalError(f"{what}: {module} has no {attr}") from None


BENCHMARKS = Registry("benchmark", group=GROUP)


def names() -> list[str]:
    return BENCHMARKS.names()


@functools.lru_cache(maxsize=None)
def get(name: str) -> Benchmark:
    """The declaration of a registered benchmark (a one-line error naming the known ones)."""
    if not isinstance(name, str) or not _NAME.match(name):
        raise DuplexEvalError(f"benchmark name {str(name)[:80]!r} is not a plain name")
    b = BENCHMARKS.load(name)
    if not isinstance(b, Benchmark):
        raise DuplexEvalError(f"benchmark {name}: its entry point names a {type(b).__name__}, not a Benchmark")
    if b.name != name:
        raise DuplexEvalError(f"benchmark entry point {name!r} declares a benchmark named {b.name!r}")
    for hook in b.hooks:
        if hook not in HOOKS:
            raise DuplexEvalError(f"benchmark {name}: unknown hook {hook!r} (known: {', '.join(HOOKS)})")
    return b


def all_benchmarks() -> list[Benchmark]:
    return [get(n) for n in names()]


def default() -> Benchmark:
    """The benchmark that declares itself the default (else the first by name)."""
    marked = [b for b in all_benchmarks() if b.default]
    if len(marked) > 1:
        raise DuplexEvalError(f"benchmarks {', '.join(b.name for b in marked)} each declare themselves the default")
    if marked:
        return marked[0]
    if not names():
        raise DuplexEvalError("no benchmark is installed (their packages register the entry point group "
                              f"{GROUP}): run `make setup`")
    return get(names()[0])


def of_config(config: Mapping[str, Any], component: str) -> Benchmark:
    """The benchmark a stage's settings name (every stage that runs a benchmark's hook names it)."""
    name = config.get("benchmark")
    if not name:
        raise DuplexEvalError(f"{component} config: `benchmark` is missing (the stage runs that "
                              f"benchmark's hooks; known: {', '.join(names())})")
    return get(name)


def builtin_datasets() -> dict[str, tuple[str, Benchmark]]:
    """{dataset name: (benchmark name, Benchmark)}; a dataset declared by two benchmarks is an error."""
    out: dict[str, tuple[str, Benchmark]] = {}
    for b in all_benchmarks():
        for d in b.datasets:
            if d.name in out:
                raise DuplexEvalError(f"dataset {d.name!r} is declared by benchmarks {out[d.name][0]!r} "
                                      f"and {b.name!r}")
            out[d.name] = (b.name, b)
    return out


def hook_of(config: Mapping[str, Any], component: str, hook: str) -> Callable:
    return of_config(config, component).hook(hook)
