"""BENCHMARKS.md is a reference: each section leads with its current figure, its command, machine and date, and no
section names a pick of the default run other than the one the default run makes now (the README's).

Its fenced commands are checked as every doc's are, by tests/test_docs_commands.py (BENCHMARKS.md is one of its DOCS).
"""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
APPENDIX = "\n## Appendix"
"""Where the dated history starts: what lies below it is kept for the record, not read as current."""
README_PICK = re.compile(r"^pick: lr_fraction (\d\.\d+) \(peak LR [^)]*\), mix (\d+:\d+)", re.MULTILINE)
DEFAULT_PICK = re.compile(
    r"default (?:run|sweep)'s (?:pick|optimum)|(?:pick|optimum) of the default (?:run|sweep)", re.IGNORECASE
)
"""How BENCHMARKS.md names the default run's pick; the point it names follows in the same paragraph."""
POINT = re.compile(r"(?:lr_fraction\s+)?(\d\.\d+)(?:\s*\([^)]*\))?(?:,?\s*mix\s+|\s*@\s*)(\d+:\d+)")
DATE = re.compile(r"20\d\d-\d\d-\d\d")
CURRENT_LINES = 450
NO_FIGURE = ("Not a measurement", "Not run on a GPU yet", "Not measurements")
"""How a section without a measured figure of its own says so, in its first paragraph."""


def current_sections(text: str) -> dict[str, str]:
    """The sections above the appendix, by heading."""
    body = text.split(APPENDIX)[0]
    return {part.splitlines()[0]: part for part in body.split("\n## ")[1:]}


def default_picks_named(text: str) -> list[tuple[str, str]]:
    """(lr_fraction as written, mix) of every place above the appendix that names the default run's pick."""
    body = text.split(APPENDIX)[0]
    named = []
    for match in DEFAULT_PICK.finditer(body):
        if body[body.rfind("\n", 0, match.start()) + 1 :].startswith("#"):
            continue  # a heading names what its section is about, not a point
        paragraph = body[match.end() :].split("\n\n")[0]
        point = POINT.search(paragraph)
        named.append(point.groups() if point else ("(no point)", ""))
    return named


def stale_picks(text: str, readme: str) -> list[tuple[str, str]]:
    """The default run's picks named above the appendix that are not the README's, at the precision written."""
    lr, mix = README_PICK.search(readme).groups()
    return [
        (shown, shown_mix)
        for shown, shown_mix in default_picks_named(text)
        if shown_mix != mix or shown == "(no point)" or float(shown) != round(float(lr), len(shown.split(".")[1]))
    ]


def test_no_section_names_a_pick_the_default_run_no_longer_makes():
    text, readme = (REPO / "BENCHMARKS.md").read_text(), (REPO / "README.md").read_text()
    assert default_picks_named(text), "BENCHMARKS.md should name the default run's pick where it gives its figures"
    assert stale_picks(text, readme) == []


def test_a_pick_the_default_run_made_before_is_found():
    """The check itself: the plan section as it read before, naming trial 5 of an older default run."""
    readme = "pick: lr_fraction 0.1171 (peak LR 0.000351), mix 4:1, of the surrogate\n"
    old = "## Plan\n\nOn the optimum of the default sweep in `runs/lr_mix` (trial 5: lr_fraction 0.1971, mix 2:1).\n"
    assert stale_picks(old, readme) == [("0.1971", "2:1")]
    assert stale_picks(old.replace("0.1971, mix 2:1", "0.1171, mix 4:1"), readme) == []
    assert stale_picks(old + APPENDIX + " earlier\n\nthe default run's pick 0.134 @ 4:1\n", readme) == [
        ("0.1971", "2:1")
    ]


def test_each_section_leads_with_its_current_figure_command_machine_and_date():
    for heading, section in current_sections((REPO / "BENCHMARKS.md").read_text()).items():
        lead = section.split("\n\n")[1]
        if lead.lstrip("*").startswith(NO_FIGURE):
            continue
        assert lead.startswith("**Current"), f"{heading}: the first paragraph gives the current figure"
        assert DATE.search(lead), f"{heading}: the current figure's date"
        assert re.search(r"CPU|GPU|H100|H200", lead), f"{heading}: the machine it was measured on"
        assert "```bash" in section, f"{heading}: the command that reproduces it"


def test_the_current_figures_are_read_to_the_end():
    """At most CURRENT_LINES lines above the appendix: the current figures, their commands and what they mean; the
    method at length and earlier figures go below it."""
    current = (REPO / "BENCHMARKS.md").read_text().split(APPENDIX)[0]
    assert len(current.splitlines()) <= CURRENT_LINES
