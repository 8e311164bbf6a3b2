"""The report next to the results: `builder` (`ReportBuilder`: what the report needs, gathered
batch by batch), `plots` (the two plots) and `render` (``summary.md`` and ``report.html`` from
the Jinja2 templates in ``templates/``).

``from numdiff_component.report import ReportBuilder`` works (docs/compare.md); the name is
looked up on first use, so that importing `render` does not import the builder.
"""

from __future__ import annotations

from numdiff_component.lazy import lazy_names

_PUBLIC = {"ReportBuilder": "numdiff_component.report.builder"}
__getattr__ = lazy_names(__name__, _PUBLIC)
__all__ = list(_PUBLIC)
