from sweep.run.progress import step_progress


def test_a_lazy_progress_says_its_note_once_before_the_first_step_and_nothing_when_no_step_comes(capsys):
    with step_progress("pretraining", 20, lazy=True, note="why: the shipped base is another recipe"):
        pass  # a cache hit
    assert capsys.readouterr().err == ""

    with step_progress("pretraining", 20, lazy=True, note="why: the shipped base is another recipe") as on_step:
        for step in range(1, 21):
            on_step(step, 1.0)
    lines = capsys.readouterr().err.splitlines()
    assert lines[0] == "why: the shipped base is another recipe" and len(lines) == 1 + 10  # a line per tenth
    assert all(line.startswith("pretraining: step ") for line in lines[1:])
