"""Running a sweep: its data and base prepared once, its trials under Ray Tune, W&B tracking, what a person sees."""
