"""Files a run writes and reads back: written whole, read as typed untrusted input; YAML configs; the run directory."""
