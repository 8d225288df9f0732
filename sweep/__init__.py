"""The orchestrator, one package per concept: the spec, the study of proxy trials, the choice among them, the loss
law, the ladder across sizes, running a sweep, the files a run keeps, the target a full run trains, promotion; and
two leaves they share, which Ray addresses the tool connects to (address) and a model's parameter count (scale)."""
