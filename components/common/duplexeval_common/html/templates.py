"""The Jinja2 environment every page is rendered with (autoescape on: a value is escaped unless it
has __html__: markupsafe.Markup and page.Raw).

Templates live beside the code that renders them, in a `templates/` folder of its package (package
data): this package's (the page frame, tables, the sample list, the self-contained bundle) and a
benchmark's own (`render(name, near=__file__)` looks in the caller's `templates/` first, then in
this package's, so a benchmark's template can import the shared macros).
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from markupsafe import Markup

SHARED = Path(__file__).resolve().parent / "templates"


@lru_cache(maxsize=None)
def environment(folder: str):
    """The environment of templates in `folder` (then the shared ones), built once per folder."""
    try:
        import jinja2
    except ImportError:
        from duplexeval_common.errors import DuplexEvalError
        raise DuplexEvalError("the HTML report needs jinja2: pip install -c constraints.txt "
                              "-r components/common/requirements.txt (or `make setup`)") from None
    from .page import fmt
    folders = [folder] if folder == str(SHARED) else [folder, str(SHARED)]
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(folders), autoescape=True,
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                             keep_trailing_newline=True)
    env.filters["fmt"] = fmt
    env.filters["cell"] = lambda v: "" if v is None else v
    return env


def _folder(near: str | Path | None) -> str:
    if near is None:
        return str(SHARED)
    p = Path(near).resolve()
    return str((p.parent if p.is_file() else p) / "templates")


def render(name: str, near: str | Path | None = None, **context) -> Markup:
    """Template `name` rendered with `context`; `near`: a module's __file__ whose package's
    templates/ folder is searched first."""
    return Markup(environment(_folder(near)).get_template(name).render(**context))


def macro(template: str, name: str, near: str | Path | None = None):
    """A macro of a template, callable from Python (it returns Markup)."""
    return getattr(environment(_folder(near)).get_template(template).module, name)
