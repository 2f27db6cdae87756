"""How a sweep runs: `runner` turns `abtlab.run` options into levels, `loop` runs the
points durably (atomic parts, resume, progress), `executor` places them, `spec` reads
TOML sweep specs."""
