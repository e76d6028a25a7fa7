"""Versioned prompts: template files, their parsers and their official settings.

A benchmark keeps its prompts in a folder of its package (a `PromptSet`, its `prompts` hook), with
the parsers they name. Each prompt is two files there:
`<name>.v<N>.txt`, the template, and `<name>.v<N>.json`, its spec: id, version, the template's
sha256, the fields it fills in, the parser of the reply, the scale, the default and the official
settings (model, seed, temperature; null means "not sent", the API's default), where the text
comes from, and how the offline `local-llm` backend constrains its answer. A template whose
sha256 differs from its spec is refused, so a recorded (id, sha256) names exactly one text.

Template format: "#" header lines, then messages, each after a line `<<<system>>>` or
`<<<user>>>` up to the newline before the next marker, the last one closed by `<<<end>>>`. Only
the placeholders `{field}` named in the spec are replaced (one pass, so a value containing
`{reply}` stays as it is); every other character, braces included, is sent as written.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from duplexeval_common.errors import DuplexEvalError
from duplexeval_common.hashing import sha256_bytes

_MARKER = re.compile(r"^<<<(system|user|assistant|end)>>>$", re.M)

@dataclass(frozen=True)
class Parsed:
    """What a parser read from a reply: the score (None for structured replies), the judge's
    own words when it gives them, and any further values (e.g. the rescaled score)."""
    score: float | int | None
    analysis: str | None = None
    value: Any = None
    extra: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Parser:
    parse: Callable[[str], Parsed | None]
    summarize: Callable[[list[Parsed]], dict]
    doc: str


@dataclass(frozen=True)
class Prompt:
    id: str
    version: int
    sha256: str
    template: str            # file name
    fields: tuple[str, ...]
    strip: tuple[str, ...]
    parser_name: str
    scale: tuple[float, float] | None
    defaults: dict
    official: dict | None
    source: str
    description: str
    local: dict
    messages_template: tuple[tuple[str, str], ...]
    parser: Parser = field(compare=False, repr=False, default=None)
    # added to the seed for each further attempt when a reply does not parse (Full-Duplex-Bench
    # v1.5's eval_behavior.py asks again with seed + 1); 0: every attempt with the same seed
    retry_seed_step: int = 0

    def identity(self) -> dict:
        return {"id": self.id, "version": self.version, "sha256": self.sha256}

    def render(self, **values: Any) -> list[dict]:
        """The chat messages with the fields filled in (every field must be given)."""
        missing = [f for f in self.fields if f not in values]
        extra = sorted(set(values) - set(self.fields))
        if missing or extra:
            raise DuplexEvalError(f"prompt {self.id}: fields {', '.join(self.fields)} expected"
                                  + (f"; missing {', '.join(missing)}" if missing else "")
                                  + (f"; unknown {', '.join(extra)}" if extra else ""))
        text = {k: (str(v).strip() if k in self.strip else str(v)) for k, v in values.items()}
        pattern = re.compile(r"\{(" + "|".join(map(re.escape, self.fields)) + r")\}")
        return [{"role": role, "content": pattern.sub(lambda m: text[m.group(1)], body)}
                for role, body in self.messages_template]

    def parse(self, reply: str) -> Parsed | None:
        return self.parser.parse(reply or "")

    def is_official(self, model: str | None, seed: int | None, temperature: float | None) -> bool:
        """Whether these settings are the official ones (the prompt text always is this one)."""
        o = self.official
        return bool(o) and model == o["model"] and seed == o["seed"] and temperature == o["temperature"]


def _split_template(text: str, name: str) -> tuple[tuple[str, str], ...]:
    marks = list(_MARKER.finditer(text))
    if not marks or marks[-1].group(1) != "end":
        raise DuplexEvalError(f"prompt template {name}: no closing <<<end>>> line")
    head = text[:marks[0].start()]
    if any(line and not line.startswith("#") for line in head.splitlines()):
        raise DuplexEvalError(f"prompt template {name}: text before the first marker that is not a # header")
    out = []
    for m, nxt in zip(marks, marks[1:]):
        if m.group(1) == "end":
            raise DuplexEvalError(f"prompt template {name}: <<<end>>> before the last message")
        body = text[m.end() + 1:nxt.start()]  # after the marker's newline ...
        out.append((m.group(1), body[:-1] if body.endswith("\n") else body))  # ... to the one before the next
    if text[marks[-1].end():].strip():
        raise DuplexEvalError(f"prompt template {name}: text after <<<end>>>")
    return tuple(out)


def _load(spec_path: Path, parsers: dict[str, Parser]) -> Prompt:
    spec = json.loads(spec_path.read_text(encoding="utf-8"))
    tpath = spec_path.parent / spec["template"]
    data = tpath.read_bytes()
    sha = sha256_bytes(data)
    if sha != spec["sha256"]:
        raise DuplexEvalError(f"prompt {spec['id']}: {tpath.name} has sha256 {sha[:12]}..., its spec "
                              f"{spec_path.name} says {spec['sha256'][:12]}... (a template never changes "
                              "in place: add a new version)")
    if spec["parser"] not in parsers:
        raise DuplexEvalError(f"prompt {spec['id']}: unknown parser {spec['parser']!r} "
                              f"(known here: {', '.join(sorted(parsers))})")
    return Prompt(id=spec["id"], version=int(spec["version"]), sha256=sha, template=tpath.name,
                  fields=tuple(spec["fields"]), strip=tuple(spec.get("strip", ())),
                  parser_name=spec["parser"], scale=tuple(spec["scale"]) if spec.get("scale") else None,
                  defaults=dict(spec["defaults"]), official=spec.get("official"),
                  source=spec["source"], description=spec.get("description", ""),
                  local=dict(spec.get("local") or {}),
                  messages_template=_split_template(data.decode("utf-8"), tpath.name),
                  parser=parsers[spec["parser"]], retry_seed_step=int(spec.get("retry_seed_step", 0)))


class PromptSet:
    """The prompts of one folder (a benchmark's), with the parsers they may name."""

    def __init__(self, folder: Path, parsers: dict[str, Parser]):
        self.folder = Path(folder)
        self.parsers = dict(parsers)
        self._all: dict[str, Prompt] | None = None

    def all(self) -> dict[str, Prompt]:
        """Every prompt by id (the newest version under the bare id, each as `id@vN` too)."""
        if self._all is None:
            found: dict[str, Prompt] = {}
            for spec in sorted(self.folder.glob("*.json")):
                p = _load(spec, self.parsers)
                found[f"{p.id}@v{p.version}"] = p
                if p.id not in found or found[p.id].version < p.version:
                    found[p.id] = p
            self._all = found
        return self._all

    def names(self) -> list[str]:
        return sorted(k for k in self.all() if "@" not in k)

    def get(self, prompt_id: str) -> Prompt:
        prompts = self.all()
        if prompt_id not in prompts:
            raise DuplexEvalError(f"unknown prompt {prompt_id!r}; known: {', '.join(self.names())}")
        return prompts[prompt_id]


def mean(xs: list[float]) -> float | None:
    """The mean of a parser's scores, rounded as the summaries write it (None for no score)."""
    return round(sum(xs) / len(xs), 6) if xs else None


def summary_mean(parsed: list[Parsed]) -> dict:
    return {"mean": mean([float(p.score) for p in parsed])}
