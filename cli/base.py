"""`sweep base SPEC`: build (or reuse from the cache) the spec's base and print its manifest and corpora."""

from __future__ import annotations

import argparse
from pathlib import Path


def add_parser(verbs) -> None:
    parser = verbs.add_parser("base", help="build (or reuse) the spec's base and print its manifest")
    parser.add_argument("spec", type=Path, help="sweep spec YAML, e.g. search_spaces/lr_mix.yaml")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from sweep.spec.spec import load_spec

    spec = load_spec(args.spec)  # a bad spec is said before torch and megatron-core are imported (seconds)
    from reports.tables import print_corpora, print_manifest
    from sweep.run.prepare import prepare

    prepared = prepare(spec)
    print_corpora(prepared.corpus_stats)
    print_manifest(prepared.base_manifest())
    return 0
