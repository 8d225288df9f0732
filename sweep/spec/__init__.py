"""The sweep spec: one YAML file onto typed configs, validated once, and its search space (lr_fraction x mix)."""
