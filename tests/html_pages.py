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
