"""The studies: runners that produce the data a study notebook, a classroom lab, a widget
or the demo looks at, by running sweeps, the simulator, calibration or the guest machine,
or by loading a dataset written before. `notebook_studies` is the study notebooks' data
(where it comes from, the delay sweep and its table, trace measures, SERA-IO workloads),
`kernel_history` the host, guest and simulator rows of the kernel history study,
`syscalls` the system-call grids measured beside Petersen's, and `explorer_points` the
points the widgets show. They sit above the machinery they run (sweep, sim, bps, sera,
...) and below `present`, which shows their results: tables, figures, widgets, reports."""
