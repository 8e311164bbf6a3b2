"""A griffe extension for the API reference: the ``>>>`` examples of a docstring are shown as
code (``pycon`` blocks), not read as Markdown block quotes. The docstrings stay plain doctest."""

from __future__ import annotations

import re
from typing import Any

import griffe

# A run of lines starting with ">>> ", with the "... " lines and the output lines after it, up
# to a blank line or the end of the docstring.
_EXAMPLE = re.compile(r"^(?P<indent>[ \t]*)>>> .*(?:\n(?!\s*$).*)*", re.M)


def fence(text: str) -> str:
    """``text`` with each doctest example in a fenced ``pycon`` block."""
    return _EXAMPLE.sub(lambda m: f"{m['indent']}```pycon\n{m[0]}\n{m['indent']}```", text)


class DoctestBlocks(griffe.Extension):
    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None and ">>> " in obj.docstring.value:
            obj.docstring.value = fence(obj.docstring.value)
