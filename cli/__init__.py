"""The `sweep` command: a handful of verbs, each a module of this package that adds its own parser.

Heavy imports (torch, Ray, megatron-core) happen inside the verbs, so that `sweep --help` answers
at once. Input errors (a bad spec, an unusable corpus, a corrupt run file, a refused address)
print one clear message and exit with code 2; Ctrl-C or SIGTERM, one line and code 130.
"""

from __future__ import annotations

import argparse
import functools
import sys

from cli import base, jobs, law, promote, report, run, status, trial
from train_entry.file_format import WRITTEN_BY

VERBS = (base, trial, run, status, report, promote, jobs, law)


@functools.cache
def build_parser() -> argparse.ArgumentParser:
    """The parser of every verb, built once a process (~12 ms): a caller of main() many times, such as the fuzz
    tests' thousands, parses with the same one. Parsing leaves it unchanged (each call has its own namespace)."""
    parser = argparse.ArgumentParser(
        prog="sweep",
        description=(
            "Sweep peak LR (as a fraction of the base's own max_lr) and the general:domain mix on "
            "small proxy runs, pick the best trade-off between domain gain and forgetting, and promote it "
            "to the full Megatron run."
        ),
    )
    parser.add_argument("--version", action="version", version=WRITTEN_BY, help="print cpt-sweep's version and exit")
    verbs = parser.add_subparsers(dest="verb", required=True, metavar="VERB")
    for verb in VERBS:
        verb.add_parser(verbs)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    from cli.errors import EXIT_INPUT_ERROR, INPUT_ERRORS, readable
    from sweep.run.interrupt import EXIT_INTERRUPTED, sigterm_interrupts

    try:
        with sigterm_interrupts():
            return args.func(args)
    except INPUT_ERRORS as exc:
        print(f"error: {readable(str(exc))}", file=sys.stderr)
        return EXIT_INPUT_ERROR
    except KeyboardInterrupt:
        print(getattr(args, "interrupted", "interrupted"), file=sys.stderr)
        return EXIT_INTERRUPTED
