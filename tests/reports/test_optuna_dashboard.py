"""optuna-dashboard opens a sweep's own storage: the command in the README serves its study."""

from __future__ import annotations

import io
import json
from wsgiref.util import setup_testing_defaults

import pytest
from optuna_dashboard import wsgi

from sweep.files.rundir import RunDir


def _get(app, path: str) -> tuple[str, dict]:
    environ: dict = {"PATH_INFO": path, "REQUEST_METHOD": "GET", "wsgi.input": io.BytesIO()}
    setup_testing_defaults(environ)
    status: list[str] = []
    body = b"".join(app(environ, lambda code, headers, exc_info=None: status.append(code)))
    return status[0], json.loads(body)


@pytest.mark.slow
def test_optuna_dashboard_serves_the_sweeps_study_and_its_trials(wandb_sweep):
    # What `optuna-dashboard sqlite:///runs/<name>/optuna.db` opens.
    run = RunDir(wandb_sweep)
    url = run.read_record().url(run)
    assert url == f"sqlite:///{(wandb_sweep / 'optuna.db').resolve()}"
    app = wsgi(url)
    status, listing = _get(app, "/api/studies")
    assert status.startswith("200")
    (study,) = [s for s in listing["study_summaries"] if s["study_name"] == "wandb_sweep"]
    status, detail = _get(app, f"/api/studies/{study['study_id']}")
    assert status.startswith("200")
    assert len(detail["trials"]) == 4
    assert {param["name"] for trial in detail["trials"] for param in trial["params"]} == {"lr_fraction", "mix"}
    assert {trial["state"] for trial in detail["trials"]} == {"Complete", "Pruned"}
