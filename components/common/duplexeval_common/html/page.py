"""The pieces every page is made of: the document frame, tables, inlined plots and audio.

Pages are rendered with Jinja2 and autoescape (templates.py, templates/page.html and
templates/macros.html): a value is escaped unless it is Raw (or markupsafe.Markup). They are
deterministic: the same inputs give the same bytes (PNG metadata without the matplotlib version or
a date, WAV without timestamps, no clock in the text), so a report of an archived run can be
compared byte for byte. The Content-Security-Policy admits only inline styles and scripts, data:
URIs and, for audio, files beside the page ('self': a sample page's players link the store's WAVs
by relative path, docs/reports.md); a page that tried to load anything from the network would be
refused by the browser, and the report's browser test checks that no request leaves the machine.
"""

from __future__ import annotations

import base64
import io
from typing import Iterable, Sequence

import numpy as np
from markupsafe import Markup, escape as _escape

from . import templates

CSP = ("default-src 'none'; img-src data:; media-src 'self' data:; style-src 'unsafe-inline'; "
       "script-src 'unsafe-inline'")

STYLE = """
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:1.5rem auto;max-width:76rem;
 padding:0 1rem;color:#1d2330;line-height:1.4}
h1{font-size:1.5rem}h2{font-size:1.2rem;margin-top:2rem;border-bottom:1px solid #dde}
h3{font-size:1.05rem}
table{border-collapse:collapse;margin:.5rem 0 1rem;font-size:.9rem}
th,td{border:1px solid #d6d9e0;padding:.25rem .5rem;text-align:right;vertical-align:top}
th{background:#f2f4f8}td.l,th.l{text-align:left}
.muted{color:#667}.bad{color:#a01818}.good{color:#11702f}
img.plot{max-width:100%;height:auto;display:block;margin:.5rem 0}
nav a{margin-right:1rem}code{font-size:.85rem}
"""


def escape(x) -> str:
    """x as HTML text ('' for None), a plain str (for f-strings; a template escapes by itself)."""
    return str(_escape("" if x is None else str(x)))


def fmt(x, nd: int = 4) -> str:
    """A number for a table: '-' for None, fixed decimals for floats."""
    if x is None:
        return "-"
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, float):
        return f"{x:.{nd}f}"
    return str(x)


def page(title: str, body: str, script: str = "") -> str:
    """A whole document (templates/page.html): title, inline style, body (HTML the caller made of
    escaped or rendered parts) and an optional inline script."""
    return str(templates.render("page.html", csp=Markup(CSP), title=title, style=Markup(STYLE),
                                body=Markup(body), script=Markup(script)))


def table(headers: Sequence[str], rows: Iterable[Sequence], left: int = 1, cls: str = "") -> "Raw":
    """An HTML table (the `table` macro of templates/macros.html); the first `left` columns are
    left-aligned. Cells are escaped unless they are Raw (already HTML); None is an empty cell."""
    return Raw(templates.macro("macros.html", "table")(list(headers), [list(r) for r in rows], left, cls))


class Raw(str):
    """A string that is already HTML (a link, an image, a table): templates and `table` do not
    escape it (it has __html__, as markupsafe.Markup has). Concatenated with a str it is a plain
    str again, and escaped where a template shows it: wrap composed HTML in Raw (or Markup)."""
    __slots__ = ()

    def __html__(self) -> str:
        return self


def link(href: str, text: str, **attrs: str) -> Raw:
    extra = Markup("").join(Markup(' {}="{}"').format(k, v) for k, v in sorted(attrs.items()))
    return Raw(Markup('<a href="{}"{}>{}</a>').format(href, extra, "" if text is None else text))


def data_uri(data: bytes, mime: str) -> str:
    return f"data:{mime};base64," + base64.b64encode(data).decode("ascii")


def matplotlib():
    """pyplot on the Agg backend with fixed settings (fonts shipped with matplotlib, no hash salt
    from the clock), imported on first use; an install hint when it is missing."""
    try:
        import matplotlib as mpl
    except ImportError:
        from duplexeval_common.errors import DuplexEvalError
        raise DuplexEvalError("the HTML report needs matplotlib: pip install -c constraints.txt "
                              "-r components/orchestrator/requirements.txt (or `make setup`)") from None
    mpl.use("Agg", force=True)
    mpl.rcParams.update({"svg.hashsalt": "duplexeval", "font.family": "DejaVu Sans",
                         "figure.dpi": 100, "savefig.dpi": 100, "path.simplify": True})
    import matplotlib.pyplot as plt
    return plt


def figure_png(fig, alt: str, close: bool = True) -> Raw:
    """A matplotlib figure as an inlined PNG <img> (no Software/date metadata: same bytes each time)."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", metadata={"Software": None})
    if close:
        import matplotlib.pyplot as plt
        plt.close(fig)
    return Raw(Markup('<img class="plot" alt="{}" src="{}">').format(alt, data_uri(buf.getvalue(), "image/png")))


def wav_bytes(x: np.ndarray, sr: int) -> bytes:
    """16-bit PCM WAV of a mono float signal (clipped to [-1, 1]); no timestamps, same bytes each time."""
    import soundfile as sf
    buf = io.BytesIO()
    sf.write(buf, np.clip(np.asarray(x, dtype=np.float64), -1.0, 1.0), sr, format="WAV", subtype="PCM_16")
    return buf.getvalue()


def audio(x: np.ndarray, sr: int, element_id: str, label: str) -> Raw:
    """An <audio controls> element with the signal inlined as WAV (run.player links a stage's
    file instead, or inlines it in a self-contained bundle)."""
    return player(element_id, label, data_uri(wav_bytes(x, sr), "audio/wav"), preload="auto")


def player(element_id: str, label: str, src: str, preload: str = "none") -> Raw:
    """An <audio controls> element (the `player` macro of templates/macros.html)."""
    return Raw(templates.macro("macros.html", "player")(
        {"element_id": element_id, "label": label, "src": src, "preload": preload}))
