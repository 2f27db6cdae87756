"""Results as data: every number a page quotes comes from a stored dataset under
`data/results/`, named in one registry (`data/results/index.toml`) with the command that
regenerates it; pages are rendered from them and a claim is re-checked with one command
(`abtlab results check NAME`)."""
