"""MLflow metric keys of groups (SPEC §3.1): each column name and group value as a key part.

A part holds only characters MLflow allows in a key on every system, and two texts never give
one part: every character but ASCII letters, digits, ``-``, space and a ``.`` that is not first
is written ``_XX`` per UTF-8 byte (``_`` too), so the escaped form decodes back; the words for
null and the empty text, and the hash suffix of a cut part, start with ``_`` and a character no
escape has there.
"""

from __future__ import annotations

import hashlib
import string

PART_MAX = 100
"""The longest key part; a longer one is cut to `CUT_KEEP` characters and a hash suffix."""
CUT_KEEP = 90
HASH_DIGITS = 8
NULL_PART = "_null"
EMPTY_PART = "_empty"
BY_PREFIX = "by"
"""Group metrics are ``numeric_diff/by/<column>/<value>/<metric>``."""

_KEPT = frozenset(string.ascii_letters + string.digits + "- .")


def _escaped(char: str, first: bool) -> str:
    if char in _KEPT and not (first and char == "."):
        return char
    return "".join(f"_{byte:02X}" for byte in char.encode("utf-8", "surrogatepass"))


def key_part(text: str | None) -> str:
    """``text`` (a column name, a group's value; None: the null group) as a metric key part.

    >>> [key_part(t) for t in ("algebra", "a/b", "x=1", "a_b", "Zürich", "..", None, "")]
    ['algebra', 'a_2Fb', 'x_3D1', 'a_5Fb', 'Z_C3_BCrich', '_2E.', '_null', '_empty']
    >>> part = key_part("x" * 300); len(part), part[88:92]
    (100, 'xx_h')
    """
    if text is None:
        return NULL_PART
    if text == "":
        return EMPTY_PART
    part = "".join(_escaped(char, i == 0) for i, char in enumerate(text))
    if len(part) <= PART_MAX:
        return part
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:HASH_DIGITS]
    return f"{part[:CUT_KEEP]}_h{digest}"
