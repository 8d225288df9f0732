"""Running a sweep: its data and base prepared once, its trials under Ray Tune (the searcher that asks the study),
W&B tracking, what a person sees."""
