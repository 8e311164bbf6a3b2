"""SPEC §1.2.1 and v4 §1.2.8: the tables of English number words (``words="en"``, and the words
read only with ``words="all"``), each word written once, and the forms made from them: the
derived tables (plurals, run-together tens, the vocabularies) and the column reader's route
test (`route_words`). `words` reads a phrase with them; `amounts` what follows a token.
"""

from __future__ import annotations

UNITS = dict(
    zip(
        ["one", "two", "three", "four", "five", "six", "seven", "eight", "nine"],
        range(1, 10),
        strict=True,
    )
)
TEENS = dict(
    zip(
        [
            "ten",
            "eleven",
            "twelve",
            "thirteen",
            "fourteen",
            "fifteen",
            "sixteen",
            "seventeen",
            "eighteen",
            "nineteen",
        ],
        range(10, 20),
        strict=True,
    )
)
TENS = dict(
    zip(
        ["twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"],
        range(20, 100, 10),
        strict=True,
    )
)
MAGNITUDES = {"thousand": 10**3, "million": 10**6, "billion": 10**9, "trillion": 10**12}
FRACTION_WORDS = {"half": 2, "halves": 2, "third": 3, "quarter": 4, "fourth": 4}
for _name, _d in zip(
    ["fifth", "sixth", "seventh", "eighth", "ninth", "tenth", "hundredth", "thousandth"],
    (5, 6, 7, 8, 9, 10, 100, 1000),
    strict=True,
):
    FRACTION_WORDS[_name] = _d

# v4 (words="all"): the words read only then.
MORE_ZEROS = {"nought": 0, "naught": 0, "nil": 0}  # as "zero"
MULTIPLIERS = {"dozen": 12, "lakh": 10**5, "crore": 10**7}
TINY_FRACTIONS = {"millionth": 10**6, "billionth": 10**9, "trillionth": 10**12}
POINT_ZEROS = {"oh": 0}  # a decimal digit only after "point"
SIGN_WORDS = ("minus", "negative")
MAIN_UNITS = ("dollar", "euro", "pound")  # composite amounts: main unit, then 1/100 of it
MINOR_UNITS = ("cent", "penny", "pence")
NOT_HALF_AFTER = ("the", "first", "second", "other", "last", "latter")  # "the second half"

for _table in (FRACTION_WORDS, TINY_FRACTIONS):
    for _name, _d in list(_table.items()):
        if not _name.startswith("hal"):
            _table[_name + "s"] = _d
WORD_CHARS = "A-Za-z&"
"""SPEC §1.2.1: a word is a run of ASCII letters (any case) or ``&``: a class body that `re`
and RE2 read alike."""
VOCABULARY = {"zero", "hundred", "a", "and", "&", *UNITS, *TEENS, *TENS, *MAGNITUDES}
VOCABULARY |= set(FRACTION_WORDS)
# The words a phrase can start with ("a" needs "hundred" or an M after it).
FIRST_WORDS = ["zero", "hundred", *UNITS, *TEENS, *TENS, *MAGNITUDES]
# v4: plural multipliers (read with a count only), run-together tens and units ("twentyone").
PLURALS = {w + "s": w for w in ["hundred", *MAGNITUDES, *MULTIPLIERS]}
RUN_TOGETHER = {t + u: (t, u) for t in TENS for u in UNITS}
ALL_MAGNITUDES = MAGNITUDES | MULTIPLIERS
ALL_FRACTION_WORDS = FRACTION_WORDS | TINY_FRACTIONS
ALL_VOCABULARY = VOCABULARY | set(MORE_ZEROS) | set(MULTIPLIERS) | set(TINY_FRACTIONS)
ALL_VOCABULARY |= {"point", *POINT_ZEROS}


def route_words(v4: bool) -> str:
    """The words that start a phrase or sign a token (a superset, for ``(?i)``), as an
    alternation; v4 adds ``a`` D, run-together tens and the words read only then."""
    words = list(FIRST_WORDS)
    if not v4:
        return "|".join(words)
    words += [*MORE_ZEROS, *MULTIPLIERS, "half", "point", *SIGN_WORDS]
    singular = [w for w in ALL_FRACTION_WORDS if not w.endswith("s")]
    return "|".join(
        [
            *words,
            rf"a[ \t]+(?:{'|'.join(singular)})",
            f"(?:{'|'.join(TENS)})(?:{'|'.join(UNITS)})",
        ]
    )
