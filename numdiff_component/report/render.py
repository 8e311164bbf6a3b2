"""The report as text: ``summary.md`` and ``report.html``, from the Jinja2 templates shipped in
``numdiff_component/report/templates``.

Cells are untrusted text. Every user-derived string (cells, ids, column names, the source,
notes) is first made one line with its control characters visible (`text`), then escaped for
its medium: by Jinja2's autoescape in ``report.html``; in ``summary.md`` by the ``md`` filter
(`markdown`), so that no HTML tag, entity, emphasis, code span, link, image or autolink can
come out of it.
"""

from __future__ import annotations

import base64
import math
import re
from functools import cache
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from numdiff_component.errors import visible
from numdiff_component.reading.located import number_text
from numdiff_component.reading.spans import around

if TYPE_CHECKING:
    import jinja2

CELL_CHARS = 60
NUMERIC = {"row", "output value", "expected value", "score", "value", "95% interval"}
TEXT = {"id", "output", "expected"}
CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'"


@cache
def environment(html: bool) -> jinja2.Environment:
    import jinja2  # here, not above: Spark's workers import this module and need no Jinja2

    env = jinja2.Environment(
        loader=jinja2.PackageLoader("numdiff_component.report", "templates"),
        autoescape=html,  # every value in report.html is escaped unless marked safe
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["md"] = markdown
    return env


def render(template: str, **values: Any) -> str:
    """Fill ``template`` (``summary.md.j2`` or ``report.html.j2``) with ``values``."""
    env = environment(template.endswith(".html.j2"))
    css = env.loader.get_source(env, "report.css")[0] if env.loader else ""
    return env.get_template(template).render(css=css, csp=CSP, **values)


def image(png: bytes) -> str:
    """A PNG as a data URI (the page loads nothing from outside)."""
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


def kind(header: str) -> str:
    """The CSS class of a column: numbers right-aligned, user text in monospace."""
    return "num" if header in NUMERIC else "text" if header in TEXT else ""


def number(name: str, value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    if name.startswith("n_"):
        return f"{int(value):,}"
    return f"{float(value):.6g}"


def text(value: Any, limit: int | None = CELL_CHARS) -> str:
    """``value`` as one line of visible text (no control character), cut to ``limit``."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if isinstance(value, (float, np.floating)):
        return f"{float(value):.6g}"
    text = visible(str(value))
    if limit is not None and len(text) > limit:
        text = text[: limit - 1] + "…"
    return text


SPAN_CHARS = 30
"""Characters shown on each side of the number read in a row's text (SPEC §1.4)."""
NO_NUMBER = "no number: "


def marked(value: Any, start: Any, end: Any) -> str | dict[str, str]:
    """A cell of text around the number read in it (``value[start:end]``, SPEC §1.4): its
    ``before``, ``token`` and ``after`` as one line of visible text each, `SPAN_CHARS` around
    the token, ``…`` where the text is cut, for the templates to mark the token. A text with
    no number shows its start, and says so."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if pd.isna(start):
        return NO_NUMBER + text(value, CELL_CHARS - len(NO_NUMBER))
    written = str(value) if isinstance(value, str) else number_text(value)
    before, token, after = around(written, int(start), int(end), SPAN_CHARS)
    return {"before": _part(before), "token": _part(token), "after": _part(after)}


def _part(part: str) -> str:
    """`visible`, keeping one space where ``part`` starts or ends with blank space (it meets
    another part of the line there)."""
    shown = (" " if part[:1].isspace() else "") + visible(part)
    return shown + " " if part[-1:].isspace() and not shown.endswith(" ") else shown


def cells(frame: pd.DataFrame) -> tuple[list[str], list[list[str | dict[str, str]]]]:
    """The header and the rows of ``frame`` as text; its ``output`` and ``expected`` as the
    text around their numbers (`marked`), where it holds their spans (``output_start``...)."""
    spans = [
        side for side in ("output", "expected") if {side, f"{side}_start"} <= set(frame.columns)
    ]
    drop = [f"{side}_{end}" for side in spans for end in ("start", "end")]
    shown = [c for c in frame.columns if c not in drop]
    rows: list[list[str | dict[str, str]]] = []
    for _, row in frame.iterrows():
        rows.append(
            [
                marked(row[c], row[f"{c}_start"], row[f"{c}_end"]) if c in spans else text(row[c])
                for c in shown
            ]
        )
    return [str(c).replace("_", " ") for c in shown], rows


# Backslash escapes for what makes emphasis, strikethrough, code, links, images and table cells,
# and for the ":" of "http://" or "javascript:" and a "." not between digits ("www.example.com"),
# so that no autolink is recognised. "&", "<", ">" and the "@" of an e-mail become entities:
# CommonMark renderers and showdown (which shows "\@" as is) both show them as the character.
_MARKDOWN = re.compile(r"[\\`*_~\[\]()!|:]|(?<![0-9])\.|\.(?![0-9])")


def markdown(text: str) -> str:
    """``text`` (one line) as inert Markdown: it shows as itself and makes no markup."""
    text = _MARKDOWN.sub(lambda m: "\\" + m.group(), text)
    return (
        text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("@", "&#64;")
    )
