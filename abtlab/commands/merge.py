"""`abtlab merge A.nc B.nc ... --out C.nc`: pool run datasets of one design along rep."""
from __future__ import annotations

import sys
from pathlib import Path

from ..errors import ConfigError

__all__ = ["register"]


def register(sub):
    p = sub.add_parser("merge", help="pool datasets of one design (other seeds, sittings or "
                                     "levels) into one, repetitions after repetitions",
                       description="Every dataset must have the same factors, backend and "
                                   "freq_mode (and an emulated sweep's f_ref_ghz). Their levels "
                                   "may differ (more repetitions at some frequencies, a cell's "
                                   "failed runs run again at that cell only): the merged levels "
                                   "are the union (the first dataset's order, numeric levels "
                                   "that ascend kept ascending), and a run a dataset did not have "
                                   "is missing as a failed run is (NaN, run_id -1), so n counts "
                                   "per point; merged_levels says which levels each dataset had. "
                                   "The op, commit and batch records follow their runs; attrs "
                                   "that differ keep every value, and merged_from names each "
                                   "source with its command and seed.")
    p.add_argument("runs", nargs="+", help="run datasets (.nc or .zarr)")
    p.add_argument("--out", "-o", required=True, help="where to write the pooled dataset")
    p.add_argument("--force", action="store_true", help="replace what is at --out")
    p.add_argument("--keep-duplicates", dest="keep_duplicates", action="store_true",
                   help="merge datasets that repeat each other's run records or ran with the same "
                        "seed and configuration (refused otherwise), naming them in the attr "
                        "duplicates")
    p.set_defaults(func=main)


def main(args) -> int:
    # deferred: every command module loads for `abtlab --help` (see commands/__init__)
    from ..data import store
    from ..data.merge import merge_reps
    from ..data.schema import MERGED_DUPLICATES, MERGED_LEVELS, REP, RUN_ID
    store.check_out(args.out, force=True)          # writable: before anything is read
    if Path(args.out).exists() and not args.force:
        raise ConfigError("--out", args.out, "a new path (--force replaces it)")
    for r in args.runs:
        if not store.is_dataset(r):
            raise ConfigError("runs", r, "run datasets (.nc or .zarr) of abtlab")
    merged = merge_reps([store.load(r).load() for r in args.runs], names=args.runs,
                        keep_duplicates=args.keep_duplicates)
    if merged.attrs.get(MERGED_DUPLICATES):
        print(f"abtlab merge: warning: kept, marked in the attr {MERGED_DUPLICATES}: "
              f"{merged.attrs[MERGED_DUPLICATES]}", file=sys.stderr)
    store.save(merged, args.out)
    print(f"{args.out}: {merged.sizes['rep']} repetitions from {len(args.runs)} datasets")
    if merged.attrs.get(MERGED_LEVELS):
        print(f"  levels: {merged.attrs[MERGED_LEVELS]}")
    empty = int((merged[RUN_ID] < 0).all(REP).sum())
    if empty:
        print(f"abtlab merge: warning: {empty} point{'s' * (empty != 1)} with no run (no "
              f"dataset ran {'them' if empty != 1 else 'it'}, or every run failed)",
              file=sys.stderr)
    return 0
