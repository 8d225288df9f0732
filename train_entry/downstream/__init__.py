"""Downstream scores: a trial's model scored on benchmark tasks with lm-evaluation-harness, from local task files.

`tasks` reads and checks a task's YAML (its data must be local files: nothing is downloaded), `scores` holds what an
evaluation gives back and a trial's drop against the base, `harness` runs lm-evaluation-harness on a model in memory
(the `eval` extra). docs/downstream.md says how a sweep uses them.
"""
