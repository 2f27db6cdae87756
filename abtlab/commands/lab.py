"""`abtlab lab list | copy DIR | check --out DIR [--real | --guest | --guest-live]
[--sim-params NAME] [--real-kernel auto|stored|none]`: the classroom labs."""
from __future__ import annotations

import os

__all__ = ["register"]


def register(sub):
    p = sub.add_parser("lab", help="classroom labs: list, copy for students, check they run here "
                                   "(pip install 'abtlab[notebooks]')")
    lsub = p.add_subparsers(dest="lab_command", metavar="ACTION", required=True)
    lsub.add_parser("list", help="list the lab notebooks").set_defaults(func=_list)
    c = lsub.add_parser("copy", help="copy the lab notebooks into a folder for students")
    c.add_argument("dest")
    c.add_argument("--overwrite", action="store_true", help="replace notebooks already there")
    c.set_defaults(func=_copy)
    k = lsub.add_parser("check", help="run every lab into an HTML report that opens with its "
                        "answer key: what each lab measured here and which predictions it grades correct")
    k.add_argument("--out", required=True)
    where = k.add_mutually_exclusive_group()
    where.add_argument("--real", action="store_true",
                       help="data=auto: the real kernel where root and loop devices are available")
    where.add_argument("--guest", action="store_true",
                       help="the guest's paper machine, read from its stored result (paper_fig7a_342_grid: "
                            "Linux 3.4.2 in the qemu guest, lock-step virtual time, IOzone's polling "
                            "start, Fig. 7a's cell) at the labs' clocks, for the labs that take it; "
                            "nothing runs in the guest")
    where.add_argument("--guest-live", action="store_true",
                       help="data=guest: run the labs in the qemu guest now (a real Linux kernel, virtual "
                            "time, no root; minutes per lab at the paper's cell)")
    k.add_argument("--sim-params", default=None, metavar="NAME|FILE",
                   help="the simulator's parameters for the labs that take them (e.g. paper_machine: "
                        "the paper's 4-core machine, where the simulator shows the paper's effect)")
    k.add_argument("--real-kernel", default=None, choices=("auto", "stored", "none"),
                   help="the real kernel the journal labs set beside their run: auto (this host's, run "
                        "where root is available, else the stored host result; the labs' default), "
                        "stored, or none")
    k.add_argument("--workers", type=int, default=2)
    k.set_defaults(func=_check)


def _list(args):
    # deferred: every command module loads for `abtlab --help` (see commands/__init__)
    from ..extras import require
    from ..present.classroom import lab_notebooks
    nbformat = require("nbformat", "notebooks", "abtlab lab list (the labs are notebooks)")
    for p in lab_notebooks():
        title = next((c.source.splitlines()[0].lstrip("# ") for c in nbformat.read(p, 4).cells
                      if c.cell_type == "markdown"), "")
        print(f"{p.stem:20} {title}")
    return 0


def _option_typo(dest: str, options) -> str | None:
    """The option `dest` looks like a mistyped form of ('overwrite', '-overwrite',
    '—overwrite', 'overwite' for --overwrite), or None."""
    import difflib
    name = os.path.basename(os.path.normpath(dest)).lstrip("-–—").lower()
    close = difflib.get_close_matches(name, [o.lstrip("-") for o in options], n=1, cutoff=0.8)
    return f"--{close[0]}" if close else None


def _copy(args):
    # deferred: every command module loads for `abtlab --help` (see commands/__init__)
    from ..errors import ConfigError
    from ..present.classroom import copy_labs
    typo = _option_typo(args.dest, ("--overwrite", "--help"))
    if typo or args.dest.startswith(("–", "—")):
        raise ConfigError("dest", args.dest, "a folder name, not an option"
                          + (f" (did you mean {typo}?)" if typo else ""))
    for p in copy_labs(args.dest, overwrite=args.overwrite):
        print(p)
    return 0


def _check(args):
    # deferred: every command module loads for `abtlab --help` (see commands/__init__)
    from ..labs.journal import GUEST_RESULT
    from ..present.classroom import ANSWER_KEY_ENV, lab_notebooks, lab_settings
    from ..present.report import Item, answers, run_batch
    data = "auto" if args.real else GUEST_RESULT if args.guest else "guest" if args.guest_live else "sim"
    real = {} if args.real_kernel is None else {"real_kernel": None if args.real_kernel == "none"
                                                else args.real_kernel}
    items = [Item(p, lab_settings(p, data, args.sim_params, **real)) for p in lab_notebooks()]
    before = os.environ.get(ANSWER_KEY_ENV)
    os.environ[ANSWER_KEY_ENV] = "1"      # inherited by the kernels: checks give the key
    try:
        outcomes, index = run_batch(items, args.out, workers=args.workers,
                                    title="abtlab classroom labs: answer key")
    finally:
        if before is None:
            os.environ.pop(ANSWER_KEY_ENV, None)
        else:
            os.environ[ANSWER_KEY_ENV] = before
    for o in outcomes:
        setting = ", ".join(f"{k}={v}" for k, v in o.item.parameters.items())
        print(f"{o.item.notebook.stem} ({setting}; {o.status}, {o.seconds:.0f} s):")
        for line in (answers(o.ipynb) if o.ipynb else []) or [f"  {o.status}: {o.error[-200:]}"]:
            print(f"  {line}")
    failed = sum(o.status != "ok" for o in outcomes)
    print(f"report: {index} ({len(outcomes) - failed} ok, {failed} failed)")
    return 1 if failed else 0
