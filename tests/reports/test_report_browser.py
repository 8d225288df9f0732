"""Reports of real tiny sweeps, opened in headless Chromium: the page renders, shows the optimum and
requests nothing from the network.

Chromium is Debian's `chromium` (installed by `./install.sh --test` where it is missing), driven by
playwright with `executable_path`; playwright's own browser download is never used.
"""

from __future__ import annotations

import io
import json
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from PIL import Image, ImageStat
from playwright.sync_api import sync_playwright

from reports.report import INDEX_HTML, REPORT_DIR
from reports.snapshot import load_run, spec_differences

pytestmark = pytest.mark.slow

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
SWEEP_TIMEOUT_S = 300
BROWSER_TIMEOUT_MS = 60_000


@dataclass(frozen=True)
class Rendered:
    text: str
    requests: list[str]
    blocked: list[str]
    """Console messages about a resource the page's Content-Security-Policy refused: a request
    the policy stopped would not show up among `requests`."""
    images_loaded: bool
    screenshot: Image.Image


def render(index: Path, screenshot: Path) -> Rendered:
    executable = shutil.which("chromium") or (str(CHROMIUM) if CHROMIUM.exists() else None)
    if executable is None:
        pytest.fail(
            "Chromium is needed to check the report in a browser and was not found (looked for `chromium` on PATH "
            f"and {CHROMIUM}); install it with `./install.sh --test` (as root it runs `apt-get install -y chromium`) "
            "or `sudo apt-get install chromium`"
        )
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS, timeout=BROWSER_TIMEOUT_MS)
        try:
            page = browser.new_page(viewport={"width": 1300, "height": 900})
            page.set_default_timeout(BROWSER_TIMEOUT_MS)
            requests: list[str] = []
            console: list[str] = []
            page.on("request", lambda request: requests.append(request.url))
            page.on("console", lambda message: console.append(message.text))
            page.goto(index.as_uri(), wait_until="load")
            images_loaded = page.evaluate(
                "Array.from(document.images).every(image => image.complete && image.naturalWidth > 0)"
            )
            page.screenshot(path=str(screenshot), full_page=True)
            text = page.inner_text("body")
        finally:
            browser.close()
    return Rendered(
        text=text,
        requests=requests,
        blocked=[line for line in console if "Content Security Policy" in line],
        images_loaded=images_loaded,
        screenshot=Image.open(io.BytesIO(screenshot.read_bytes())).convert("RGB"),
    )


def assert_offline_and_not_blank(rendered: Rendered) -> None:
    assert rendered.requests, "the browser recorded no request at all: the check would be vacuous"
    assert all(url.startswith(("file:", "data:")) for url in rendered.requests), rendered.requests
    assert rendered.blocked == []
    assert rendered.images_loaded
    image = rendered.screenshot
    colours = image.getcolors(maxcolors=1 << 24)
    assert len(colours) > 200, f"only {len(colours)} colours: the page looks blank"
    # Blank or unstyled, a page is near 0; these long pages of tables and plots measure 19-40.
    assert max(ImageStat.Stat(image).stddev) > 10


def test_report_of_a_real_sweep_renders_offline_with_the_optimum_on_the_page(tiny_sweep, tmp_path):
    index = tiny_sweep.run_dir / REPORT_DIR / INDEX_HTML
    assert f"report: {Path('runs') / 'tiny_sweep' / REPORT_DIR / INDEX_HTML}" in tiny_sweep.output
    best = json.loads((tiny_sweep.run_dir / "best.json").read_text())

    rendered = render(index, tmp_path / "report.png")

    assert_offline_and_not_blank(rendered)
    optimum = best["best_observed"]
    if optimum is None:
        # A tiny sweep may have nothing within the budget; the page must then say so.
        assert best["verdict"] in rendered.text
    else:
        assert f"{optimum['lr_fraction']:.4g}" in rendered.text
        assert optimum["mix"] in rendered.text
    assert "learning curves" in rendered.text and "kept only" not in rendered.text
    # The pick leads the page: its sentence comes before the best observed trial, which is evidence.
    assert rendered.text.index(best["verdict"][:60]) < rendered.text.index("Evidence: the best observed trial")


def test_comparison_of_two_real_sweeps_overlays_both_and_renders_offline(tiny_sweep, wandb_sweep, tmp_path):
    """The second sweep is the W&B tests' (another budget, mixes and sampler, with pruned trials)."""
    runs = [tiny_sweep.run_dir, wandb_sweep]
    assert (wandb_sweep / REPORT_DIR / INDEX_HTML).is_file()  # `sweep run` wrote it, pruned trials and all
    done = subprocess.run(
        [sys.executable, "-m", "cli", "report", *map(str, runs)],
        check=False,
        capture_output=True,
        text=True,
        timeout=SWEEP_TIMEOUT_S,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    index = tiny_sweep.run_dir.parent / f"compare-tiny_sweep-vs-{wandb_sweep.name}" / REPORT_DIR / INDEX_HTML
    assert done.stdout.strip() == f"report: {index}"

    rendered = render(index, tmp_path / "compare.png")

    assert_offline_and_not_blank(rendered)
    differences = spec_differences([load_run(run_dir) for run_dir in runs])
    assert all(differences.values())
    for run_dir in runs:
        assert ", ".join(differences[run_dir.name]) in rendered.text
        assert json.loads((run_dir / "best.json").read_text())["verdict"] in rendered.text
