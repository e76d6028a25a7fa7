"""Reading the HTML pages a report writes, for the tests: every table (headers and cells) and
every link, with the stdlib's HTMLParser (no browser)."""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path


class Tables(HTMLParser):
    """Every <table> as rows of cell texts, keyed by its class; links collected."""

    def __init__(self):
        super().__init__()
        self.tables: list[tuple[str, list[list[str]]]] = []
        self.links: list[str] = []
        self.srcs: list[str] = []
        self._cell = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "table":
            self.tables.append((a.get("class") or "", []))
        elif tag == "tr" and self.tables:
            self.tables[-1][1].append([])
        elif tag in ("td", "th"):
            self._cell = ""
        if tag == "a" and "href" in a:
            self.links.append(a["href"])
        if "src" in a:
            self.srcs.append(a["src"])

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None:
            self.tables[-1][1][-1].append(self._cell)
            self._cell = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell += data


def parse(path: Path) -> Tables:
    p = Tables()
    p.feed(path.read_text(encoding="utf-8"))
    return p


def scaled_report(home: Path, out: Path, n: int, pages: tuple[str, ...]) -> tuple[dict, list[str]]:
    """The report of a run of `n` samples, made from the latest run of `home` (a real run, a few
    samples per subset) without running anything: every stage's folder is copied under a new key
    with its samples repeated up to `n` (round robin over the subsets; each copy's files are links
    to the original's, each row of unified-samples.jsonl repeated under the new id). The report's
    index lists all n; sample pages are written for `pages` only (html.run.only_pages), into
    `out`. (the scaled run record, its sample keys)."""
    import hashlib
    import json
    import os

    from duplexeval.store import Store
    from duplexeval_common.html import run as html_run
    from duplexeval_common.jsonio import read_json

    store = Store(home)
    record = store.read_run("latest")
    originals = sorted(read_json(store.stage_dir(record["stages"][0]["key"]) / "stage.json")["samples"])
    subsets = sorted({k.split("/")[0] for k in originals})
    keys = [f"{subsets[i % len(subsets)]}/{i // len(subsets)}" for i in range(n)]
    source = {k: next(o for o in originals if o.startswith(k.split("/")[0] + "/")) for k in keys}
    stages = []
    for st in record["stages"]:
        old = store.stage_dir(st["key"])
        key = hashlib.sha256(f"scaled-{n}-{st['key']}".encode()).hexdigest()
        new = store.root / key
        if not new.exists():
            new.mkdir()
            rec = read_json(old / "stage.json")
            rec["samples"] = {k: rec["samples"][source[k]] for k in keys if source[k] in rec.get("samples", {})}
            (new / "stage.json").write_text(json.dumps(rec))
            for f in old.iterdir():
                if f.is_file() and f.name not in ("stage.json", "manifest.json", "unified-samples.jsonl"):
                    os.symlink(f, new / f.name)
            if (old / "manifest.json").is_file():
                doc = read_json(old / "manifest.json")
                rows = {f"{r['subset']}/{r['id']}": r for r in doc["samples"]}
                doc["samples"] = [{**rows[source[k]], "id": k.split("/")[1]} for k in keys if source[k] in rows]
                (new / "manifest.json").write_text(json.dumps(doc))
            if (old / "unified-samples.jsonl").is_file():
                rows = {}
                for line in (old / "unified-samples.jsonl").read_text().splitlines():
                    if line.strip():
                        r = json.loads(line)
                        rows[r["sample_id"]] = r
                (new / "unified-samples.jsonl").write_text("".join(
                    json.dumps({**rows[source[k]], "sample_id": k}) + "\n" for k in keys if source[k] in rows))
            for k in keys:
                src = old / "samples" / source[k]
                if src.is_dir():
                    d = new / "samples" / k
                    d.mkdir(parents=True)
                    for f in src.iterdir():
                        os.symlink(f, d / f.name)
        stages.append({**st, "key": key})
    scaled = {**record, "run_id": record["run_id"] + f"-x{n}", "stages": stages}
    out.mkdir(parents=True, exist_ok=True)
    from duplexeval import reports
    with html_run.only_pages(pages):
        reports.benchmark_of(scaled).hook("report").build(store, scaled, out)
    return scaled, keys
