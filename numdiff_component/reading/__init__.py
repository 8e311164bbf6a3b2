"""Reading a number from a value (SPEC §1 to §1.2): one value at a time, and a whole column.

The modules follow the spec's sections; each rule is declared once and read by both readers.
Each rule module holds its literal tables once (words and their values, markers, separators,
symbols); functions make every form a reader needs from them: the `re` pattern, the RE2
pattern, the reversed pattern (`grammar.reversed_literal`), the byte tables of the column
reader. So an entry added to a table, or given by the options ``markers`` and ``scale_words``,
reaches both readers (tests/reading/test_lexicon.py adds one to each table of a copy of the source).

- `grammar`: §1, the token, the sign (and the currency symbol before it), separators, digits;
- `marks`: §1.1, answer markers and spans, scale words, percent;
- `fractions`: §1.1 ``\\frac`` and ``A/B``, §1.2.3 mixed numbers and vulgar fractions;
- `words`: §1.2.1, English number phrases; `scientific`: §1.2.4; `ranges`: §1.2.5;
  `parens`: §1.2.6; `prices`: §1.2.7;
- `plain`: the one-value reader (`parse_number`), plain Python over those rules;
- `column`, `tiers`, `tiers_readings`: the column reader (`parse_column`), pyarrow compute
  (RE2, linear time) and numpy, in tiers each exact for the rows it keeps.
"""

from numdiff_component.reading.column import (
    ColumnReading,
    parse_column,
    read_column,
    several_numbers,
)
from numdiff_component.reading.located import read_number
from numdiff_component.reading.plain import parse_number
from numdiff_component.reading.spans import RULES, Reading

__all__ = [
    "RULES",
    "ColumnReading",
    "Reading",
    "parse_column",
    "parse_number",
    "read_column",
    "read_number",
    "several_numbers",
]
