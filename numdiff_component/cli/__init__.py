"""The ``numdiff`` command: `main` (the group, ``score``, ``log-model`` and the entry point),
`compare` (``numdiff compare``), `options` (what the commands share), `output` (what ``score``
prints). The only modules that import click, print or exit."""

from numdiff_component.cli.main import main

__all__ = ["main"]
