"""The classroom labs' own layer: what a lab sets beside its run, drawn from the studies
(runs), the stored results (abtlab.results: data the labs read, never rerun) and shown
through abtlab.present. It sits above `results` because a lab reads stored results."""
