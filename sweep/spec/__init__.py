"""The sweep spec: one YAML file onto typed configs (the owners' own, assembled here), validated once; the shapes and
memory of its trials, checked before any compute. Its search space is sweep/space.py, a leaf below every user."""
