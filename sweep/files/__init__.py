"""Files a run writes and reads back: written whole, read as typed untrusted input; YAML configs; the run directory;
the study's storage URL as text (checked, filled in, masked)."""
