"""The pieces every page is made of: the document shell, tables, inlined plots and audio.

Pages are deterministic: the same inputs give the same bytes (PNG metadata without the
matplotlib version or a date, WAV without timestamps, no clock in the text), so a report of an
archived run can be compared byte for byte. The Content-Security-Policy admits only inline
styles and scripts and data: URIs; a page that tried to load anything from the network would
be refused by the browser, and the report's browser test checks that no request is made.
"""

from __future__ import annotations

import base64
import html
import io
from typing import Iterable, Sequence

import numpy as np

CSP = ("default-src 'none'; img-src data:; media-src data:; style-src 'unsafe-inline'; "
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
    return html.escape("" if x is None else str(x), quote=True)


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
    """A whole document: title, inline style, body and an optional inline script."""
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            f"<meta http-equiv=\"Content-Security-Policy\" content=\"{CSP}\">\n"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
            f"<title>{escape(title)}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n"
            f"{body}\n" + (f"<script>\n{script}\n</script>\n" if script else "") + "</body>\n</html>\n")


def table(headers: Sequence[str], rows: Iterable[Sequence], left: int = 1, cls: str = "") -> str:
    """An HTML table; the first `left` columns are left-aligned. Cells are escaped unless they are
    `Raw` (already HTML)."""
    def cell(tag: str, i: int, v) -> str:
        c = ' class="l"' if i < left else ""
        return f"<{tag}{c}>{v if isinstance(v, Raw) else escape(v)}</{tag}>"
    head = "".join(cell("th", i, h) for i, h in enumerate(headers))
    body = "\n".join("<tr>" + "".join(cell("td", i, v) for i, v in enumerate(r)) + "</tr>" for r in rows)
    return f'<table{f" class={chr(34)}{cls}{chr(34)}" if cls else ""}>\n<tr>{head}</tr>\n{body}\n</table>'


class Raw(str):
    """A string that is already HTML (a link, an image): `table` does not escape it."""


def link(href: str, text: str) -> Raw:
    return Raw(f'<a href="{escape(href)}">{escape(text)}</a>')


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
    return Raw(f'<img class="plot" alt="{escape(alt)}" src="{data_uri(buf.getvalue(), "image/png")}">')


def wav_bytes(x: np.ndarray, sr: int) -> bytes:
    """16-bit PCM WAV of a mono float signal (clipped to [-1, 1]); no timestamps, same bytes each time."""
    import soundfile as sf
    buf = io.BytesIO()
    sf.write(buf, np.clip(np.asarray(x, dtype=np.float64), -1.0, 1.0), sr, format="WAV", subtype="PCM_16")
    return buf.getvalue()


def audio(x: np.ndarray, sr: int, element_id: str, label: str) -> Raw:
    """An <audio controls> element with the signal inlined as WAV."""
    return Raw(f'<figure><figcaption>{escape(label)}</figcaption><audio id="{escape(element_id)}" controls '
               f'preload="auto" src="{data_uri(wav_bytes(x, sr), "audio/wav")}"></audio></figure>')
