"""Every link between the README, docs/ and BENCHMARKS.md leads somewhere: the file exists, and the heading a
`#fragment` names is one of that file's headings, as GitHub spells its anchors. Every file of the repository
they name in inline code (`sweep/choice/pick.py`, `tests/sweep/run/test_sweep_run.py`) exists, so a module
that moves takes its mentions with it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DOCS = (REPO / "README.md", REPO / "BENCHMARKS.md", *sorted((REPO / "docs").glob("*.md")))
LINK = re.compile(r"\]\(([^)\s]+)\)")
HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$")
FENCE = re.compile(r"^\s*```")
INLINE_PATH = re.compile(r"`([A-Za-z0-9_.-]+/[^`\s]*)`")
REPO_FOLDERS = ("benchmarks", "cli", "data", "docs", "reports", "search_spaces", "sweep", "tests", "train_entry")
"""The repository's own top-level folders: a path starting with one of them names a file or folder of it."""


def anchor(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation but `-` and `_` dropped, spaces as `-`."""
    text = re.sub(r"[`*]", "", heading).strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """The anchors of a markdown file's headings, fenced blocks left out (a `# comment` is no heading)."""
    found, fenced = set(), False
    for line in path.read_text().splitlines():
        fenced ^= bool(FENCE.match(line))
        if not fenced and (match := HEADING.match(line)):
            found.add(anchor(match.group(1)))
    return found


def internal_links(path: Path) -> list[tuple[str, str]]:
    """(file:line, target) of every link that stays inside the repository."""
    return [
        (f"{path.relative_to(REPO)}:{number}", target)
        for number, line in enumerate(path.read_text().splitlines(), 1)
        for target in LINK.findall(line)
        if not re.match(r"^[a-z]+:", target)  # https:, mailto:
    ]


def repository_paths(path: Path) -> list[tuple[str, str]]:
    """(file:line, path) of every inline-code path into the repository's own folders; globs left out."""
    return [
        (f"{path.name}:{number}", named.split("::")[0])
        for number, line in enumerate(path.read_text().splitlines(), 1)
        for named in INLINE_PATH.findall(line)
        if named.split("/")[0] in REPO_FOLDERS and "*" not in named
    ]


LINKS = [link for doc in DOCS for link in internal_links(doc)]
PATHS = [named for doc in DOCS for named in repository_paths(doc)]


def broken(source: Path, target: str) -> str | None:
    """Why the link from `source` to `target` leads nowhere, or None."""
    file, _, fragment = target.partition("#")
    destination = (source.parent / file).resolve() if file else source
    if not destination.exists():
        return f"{file} does not exist"
    if fragment and destination.suffix == ".md" and fragment not in anchors(destination):
        return f"{destination.name} has no heading #{fragment}"
    return None


@pytest.mark.parametrize("where, target", LINKS, ids=[f"{where} {target}" for where, target in LINKS])
def test_each_link_leads_to_a_file_and_heading(where, target):
    source = REPO / where.split(":")[0]
    assert broken(source, target) is None, f"{where}: ({target}) {broken(source, target)}"


@pytest.mark.parametrize("where, named", PATHS, ids=[f"{where} {named}" for where, named in PATHS])
def test_each_repository_path_named_exists(where, named):
    assert (REPO / named).exists(), f"{where}: {named} is not in the repository"


def test_a_moved_module_named_in_the_docs_is_found(tmp_path):
    doc = tmp_path / "a.md"
    doc.write_text("see `sweep/pick.py` and `sweep/choice/pick.py`, `runs/lr_mix/` and `data/*.jsonl`\n")
    assert [named for _, named in repository_paths(doc)] == ["sweep/pick.py", "sweep/choice/pick.py"]
    assert not (REPO / "sweep/pick.py").exists() and (REPO / "sweep/choice/pick.py").exists()


def test_a_link_to_a_missing_heading_or_file_is_found(tmp_path):
    doc = tmp_path / "a.md"
    doc.write_text("# The full run: plan, submit\n\n## Set-up and suite times\n```bash\n# not a heading\n```\n")
    assert anchors(doc) == {"the-full-run-plan-submit", "set-up-and-suite-times"}
    assert broken(doc, "a.md#set-up-and-suite-times") is None
    assert broken(doc, "#the-full-run-plan-submit") is None
    assert broken(doc, "a.md#not-a-heading") == "a.md has no heading #not-a-heading"
    assert broken(doc, "b.md") == "b.md does not exist"
