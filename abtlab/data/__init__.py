"""Run datasets: the schema (names, dims, units), building one from run results
(assemble), reading and writing it atomically (store), and TOML input files."""
