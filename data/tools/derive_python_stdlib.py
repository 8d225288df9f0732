#!/usr/bin/env python3
"""Derive the Python-code domain corpus (python_stdlib/{train,valid}.jsonl) from CPython's standard library.

A second domain beside e-commerce, as different from it as a domain gets: source code, which the built-in base's
BPE (trained on English and European prose) splits into about 1.7 characters per token where prose gives 3-4.
Documentation of how the bundled files were made, like derive_corpora.py; only the Python standard library is
needed. The input is a CPython 3.11 `Lib` directory (the bundled files were made from Debian 12's
/usr/lib/python3.11, packages libpython3.11-minimal and libpython3.11-stdlib 3.11.2-6+deb12u6); nothing is
downloaded. The output is deterministic: the same input files give the same bytes.

Usage:  python3 derive_python_stdlib.py STDLIB_DIR [OUT_DIR]

- Modules: the single-file modules at the top of STDLIB_DIR (`*.py`, no packages, no symbolic links), less the
  files that are not CPython's hand-written code (EXCLUDED), ordered by sha256("python_stdlib:<file name>"):
  an order that favours no part of the alphabet or size.
- Split by module, so no module has text on both sides: the first VALID_MODULES modules in that order go to
  valid.jsonl, one part each (its middle one), so that each validation document is a module of its own and the
  documents are as independent as modules are; the next ones go whole to train.jsonl until it holds
  TRAIN_CHARACTERS; the rest are not used.
- Documents: each module is cut at the starts of its top-level statements (and of a large class's members) into
  parts of at most MAX_CHARACTERS, greedily; a statement longer than that is a part of its own, and a tail under
  MIN_CHARACTERS joins the part before it. Text is kept verbatim (NFC), licence headers and comments included.

Writes OUT_DIR/python_stdlib/{train,valid}.jsonl, the two files' entries in OUT_DIR/manifest.json (the other
entries are kept) and OUT_DIR/LICENSES/CPython-modules-used.tsv (module, split, bytes, sha256 of the source).
"""

from __future__ import annotations

import ast
import hashlib
import json
import sys
import unicodedata
from collections import OrderedDict, defaultdict
from pathlib import Path

NAME = "python_stdlib"
SOURCE = "cpython-3.11-stdlib"
LICENSE = "PSF-2.0"
TRAIN_CHARACTERS = 1_600_000
"""~0.93 M tokens with the built-in base's BPE: about the size of the e-commerce domain corpus (~1.09 M)."""
VALID_MODULES = 64
"""Held-out modules, one document each: a sweep deals its validation documents into a pool and one draw per
confirmation candidate, each needing at least 10 (train_entry.data.draws.MIN_DOCUMENTS), and
benchmarks/decision_quality.py holds a third of them out as fresh text first: 64 gives the sweep's pool about 21 and
each of its two draws about 11. ~350 k characters (~200 k tokens): what a validation set of independent modules
costs; parts of a few modules (as before issue 49: 18 parts of 7 modules) move together."""
MAX_CHARACTERS = 8_000
"""As the ELTeC chunks of the general corpus."""
MIN_CHARACTERS = 200
"""No document is shorter, as in the other corpora."""
EXCLUDED = frozenset(
    {
        "_sysconfigdata__linux_x86_64-linux-gnu.py",  # generated build configuration
        "_sysconfigdata__x86_64-linux-gnu.py",
        "_distutils_system_mod.py",  # Debian's own addition
        "sitecustomize.py",  # Debian's configuration
        "stringprep.py",  # generated Unicode tables
        "this.py",  # the Zen of Python, rot13-encoded
        "__hello__.py",
        "antigravity.py",
    }
)


def modules(stdlib: Path) -> list[Path]:
    found = [
        path for path in stdlib.glob("*.py") if path.is_file() and not path.is_symlink() and path.name not in EXCLUDED
    ]
    return sorted(found, key=lambda path: hashlib.sha256(f"{NAME}:{path.name}".encode()).hexdigest())


def split_points(tree: ast.Module, lines: list[str]) -> list[int]:
    """0-based line numbers where a part may start: each top-level statement, and each member of a class longer
    than MAX_CHARACTERS."""
    points = set()
    for node in tree.body:
        points.add(_first_line(node))
        if isinstance(node, ast.ClassDef):
            text = "".join(lines[_first_line(node) : node.end_lineno])
            if len(text) > MAX_CHARACTERS:
                points.update(_first_line(member) for member in node.body)
    return sorted(points | {0})


def _first_line(node: ast.stmt) -> int:
    decorators = getattr(node, "decorator_list", [])
    return min([node.lineno, *(decorator.lineno for decorator in decorators)]) - 1


def parts(source: str) -> list[str]:
    lines = source.splitlines(keepends=True)
    points = split_points(ast.parse(source), lines) + [len(lines)]
    segments = ["".join(lines[start:end]) for start, end in zip(points, points[1:]) if start < end]
    chunks: list[str] = []
    current = ""
    for segment in segments:
        if current and len(current) + len(segment) > MAX_CHARACTERS:
            chunks.append(current)
            current = ""
        current += segment
    if current:
        if chunks and len(current.strip()) < MIN_CHARACTERS:
            chunks[-1] += current
        else:
            chunks.append(current)
    return [unicodedata.normalize("NFC", chunk.strip("\n")) for chunk in chunks if chunk.strip()]


def documents(module: Path) -> list[dict]:
    texts = parts(module.read_text(encoding="utf-8"))
    return [
        OrderedDict(text=text, id=f"cpython/{module.name}#{i}", source=SOURCE, lang="en", license=LICENSE)
        for i, text in enumerate(texts)
        if len(text) >= MIN_CHARACTERS
    ]


def main() -> None:
    stdlib = Path(sys.argv[1])
    out = Path(sys.argv[2]) if len(sys.argv) > 2 else Path(__file__).resolve().parents[1]
    splits: dict[str, list[dict]] = {"valid": [], "train": []}
    used: list[tuple[str, str, int, str]] = []
    for index, module in enumerate(modules(stdlib)):
        if index >= VALID_MODULES and _characters(splits["train"]) >= TRAIN_CHARACTERS:
            break
        split = "valid" if index < VALID_MODULES else "train"
        docs = documents(module)
        if not docs:
            continue  # nothing of MIN_CHARACTERS in it
        splits[split].extend([docs[len(docs) // 2]] if split == "valid" else docs)
        raw = module.read_bytes()
        used.append((module.name, split, len(raw), hashlib.sha256(raw).hexdigest()))
    folder = out / NAME
    folder.mkdir(parents=True, exist_ok=True)
    for split, docs in splits.items():
        with (folder / f"{split}.jsonl").open("w", encoding="utf-8") as stream:
            for doc in docs:
                stream.write(json.dumps(doc, ensure_ascii=False) + "\n")
    with (out / "LICENSES" / "CPython-modules-used.tsv").open("w", encoding="utf-8") as stream:
        stream.write("module\tsplit\tbytes\tsha256\n")
        for row in sorted(used):
            stream.write("\t".join(map(str, row)) + "\n")
    update_manifest(out, [f"{NAME}/train.jsonl", f"{NAME}/valid.jsonl"])
    print({split: (len(docs), _characters(docs)) for split, docs in splits.items()})


def _characters(docs: list[dict]) -> int:
    return sum(len(doc["text"]) for doc in docs)


def update_manifest(out: Path, paths: list[str]) -> None:
    """This corpus's entries in manifest.json, in derive_corpora.py's format; the other entries as they are."""
    manifest_path = out / "manifest.json"
    entries = {entry["path"]: entry for entry in json.loads(manifest_path.read_text(encoding="utf-8"))}
    for rel in paths:
        path = out / rel
        count, characters, by_source, licences = 0, 0, defaultdict(int), set()
        for line in path.open(encoding="utf-8"):
            doc = json.loads(line)
            count += 1
            characters += len(doc["text"])
            by_source[doc["source"]] += 1
            licences.add(doc["license"])
        entries[rel] = OrderedDict(
            path=rel,
            bytes=path.stat().st_size,
            sha256=hashlib.sha256(path.read_bytes()).hexdigest(),
            documents=count,
            characters=characters,
            documents_by_source=dict(sorted(by_source.items())),
            licenses=sorted(licences),
        )
    with manifest_path.open("w", encoding="utf-8") as stream:
        json.dump([entries[key] for key in sorted(entries)], stream, indent=1, ensure_ascii=False)
        stream.write("\n")


if __name__ == "__main__":
    main()
