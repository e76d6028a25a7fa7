"""Upstream revisions of the Full-Duplex-Bench v1.0 evaluators the official column can reproduce.

Every rule that differs between upstream revisions lives here, as a flag of `Revision`, and
official.py reads the flag; nothing else in the aggregator knows about revisions. Adding a later
upstream change that alters a number is one entry in REVISIONS (with a new flag if the rule is
new, consumed in official.py) plus its golden numbers in benchmarks/fdb-v1/duplexeval_fdb_v1/tests/golden/golden.json
(benchmarks/fdb-v1/README.md, "Official column by upstream revision").

Between the two revisions below only eval_backchannel.py differs in a way that changes a number
(benchmarks/fdb-v1/duplexeval_fdb_v1/tests/golden/README.md): upstream commit 1d40caa ("Codebase Update for New Models and
Bug Fixes", 2026-02-22) stopped a take-over segment from emptying the backchannel list.
"""

from __future__ import annotations

from dataclasses import dataclass

from duplexeval_common.errors import DuplexEvalError

REPOSITORY = "DanielLin94144/Full-Duplex-Bench"


@dataclass(frozen=True)
class Revision:
    """One upstream revision: where it is, what it matches, and its value of every rule flag.

    takeover_resets_backchannels (eval_backchannel.py): True, a VAD segment classified as a
    take-over (TOR 1) empties the backchannel list and is not added; False, every segment up to
    the first one over 3 s is added whatever its class.
    """

    name: str            # the short commit, as recorded in metrics.json and golden.json
    commit: str          # the full commit
    date: str            # commit date (YYYY-MM-DD)
    evaluator: str       # the evaluator script at that commit
    matches: str         # the published table these rules reproduce
    takeover_resets_backchannels: bool
    rule: str            # the rules that differ from the other revisions, in words (docs)

    def record(self) -> dict:
        """What metrics.json and unified.json carry as "official_revision"."""
        return {"name": self.name, "commit": self.commit, "date": self.date,
                "repository": REPOSITORY, "matches": self.matches}


REVISIONS: dict[str, Revision] = {
    "d7336bd": Revision(
        name="d7336bd", commit="d7336bda1385872b83b48a8d45d9c0003836a60d", date="2026-04-15",
        evaluator="v1_v1.5/evaluation/evaluate.py",
        matches="Full-Duplex-Bench README table (February 2026, Parakeet ASR)",
        takeover_resets_backchannels=False,
        rule="backchannel: every VAD segment up to the first one over 3 s is a backchannel, "
             "whatever its TOR (since upstream 1d40caa)"),
    "bb59575": Revision(
        name="bb59575", commit="bb595759b84934f81f1522e222e3976b51c94ff0", date="2025-09-21",
        evaluator="evaluation/evaluate.py",
        matches="Full-Duplex-Bench v1.0 paper (arXiv:2503.04721) table",
        takeover_resets_backchannels=True,
        rule="backchannel: a take-over segment (TOR 1) empties the backchannel list and is not "
             "added (before upstream 1d40caa)"),
}

DEFAULT = "d7336bd"
ALIASES = {"current": "d7336bd", "paper": "bb59575"}


class UnknownRevision(DuplexEvalError):
    """An official revision name that is neither in REVISIONS nor an alias (one line)."""


def known() -> str:
    """"d7336bd (current, default), bb59575 (paper)": the names accepted, for messages and help."""
    out = []
    for name in REVISIONS:
        tags = [a for a, n in ALIASES.items() if n == name] + (["default"] if name == DEFAULT else [])
        out.append(f"{name} ({', '.join(tags)})" if tags else name)
    return ", ".join(out)


def get(name: str | None = None) -> Revision:
    """The revision for a name (short commit, full commit or alias); None: DEFAULT."""
    if name is None:
        return REVISIONS[DEFAULT]
    key = str(name).strip()
    key = ALIASES.get(key, key)
    if key in REVISIONS:
        return REVISIONS[key]
    for rev in REVISIONS.values():
        if len(key) >= 7 and rev.commit.startswith(key.lower()):
            return rev
    raise UnknownRevision(f"unknown official revision {name!r} (known: {known()})")
