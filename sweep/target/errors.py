"""The error a target that cannot be read or planned for ends with (exit code 2)."""


class TargetError(ValueError):
    """A target that cannot be read or trained as asked, or a value that names neither a preset nor a readable file
    (a target's or a cluster's, sweep.target.presets); the message names the file, key or value and what is valid."""
