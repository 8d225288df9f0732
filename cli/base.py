"""`sweep base SPEC`: build (or reuse from the cache) the spec's base and print its manifest and corpora;
`--ship DIR`: pretrain the built-in base afresh and write it to DIR as the project ships it (sweep.run.ship)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path


def add_parser(verbs) -> None:
    parser = verbs.add_parser("base", help="build (or reuse) the spec's base and print its manifest")
    parser.add_argument("spec", type=Path, help="sweep spec YAML, e.g. search_spaces/lr_mix.yaml")
    parser.add_argument(
        "--ship",
        type=Path,
        metavar="DIR",
        help="pretrain the built-in base from the spec's corpora on the CPU, reusing nothing cached, and replace DIR "
        "with it and its manifest (how data/tiny-llama is made: --ship data/tiny-llama with the default spec)",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from sweep.spec.spec import load_spec

    spec = load_spec(args.spec)  # a bad spec is said before torch and megatron-core are imported (seconds)
    if args.ship is not None:
        return _ship(spec, args)
    from reports.tables import print_corpora, print_manifest
    from sweep.run.prepare import prepare

    prepared = prepare(spec)
    print_corpora(prepared.corpus_stats)
    print_manifest(prepared.base_manifest())
    return 0


def _ship(spec, args: argparse.Namespace) -> int:
    # Before torch is imported: the shipped base is made on the CPU whatever the machine has, so it reproduces.
    os.environ["CUDA_VISIBLE_DEVICES"] = ""
    from reports.tables import print_manifest
    from sweep.run.ship import ship_base

    manifest = ship_base(spec, args.spec, args.ship)
    print_manifest(manifest.model_dump(mode="json"))
    print(f"wrote {args.ship}")
    return 0
