"""The console every table goes to: the terminal's width, or wide enough for a log file."""

from rich.console import Console

LOG_WIDTH = 200
"""Columns when the output is a file or a pipe: wide enough that no table folds."""


def make_console() -> Console:
    console = Console()
    return console if console.is_terminal else Console(width=LOG_WIDTH)
