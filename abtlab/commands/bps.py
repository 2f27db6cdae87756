"""`abtlab bps metrics TRACE...` and `abtlab bps study DIR`: the metric and study of He, Sun and Yin
("BPS: A Performance Metric of I/O System", IEEE IPDPS Workshops 2013)."""
from __future__ import annotations

import json

from ..errors import ConfigError

__all__ = ["register"]


def _int_list(field, text):
    units = {"k": 1024, "m": 1024**2, "g": 1024**3}
    out = []
    for item in text.split(","):
        s = item.strip().lower()
        mult = units.get(s[-1:], 1)
        try:
            out.append(int(s[:-1] if mult > 1 else s) * mult)
        except ValueError:
            raise ConfigError(field, text, "comma-separated integers, optionally with k/m/g") from None
    return out


def register(sub):
    p = sub.add_parser("bps", help="BPS, IOPS, bandwidth and ARPT of traces; the BPS study of He, Sun and Yin, "
                       "'BPS: A Performance Metric of I/O System', IEEE IPDPS Workshops 2013")
    bsub = p.add_subparsers(dest="bps_command", metavar="{metrics,study}")
    m = bsub.add_parser("metrics", help="metrics of abtlab, fio-log or Darshan DXT traces")
    m.add_argument("paths", nargs="+", help="trace files (or a directory of abtrace.<pid>.trace)")
    m.add_argument("--format", default="auto", help="auto | abtlab | fio | darshan")
    m.add_argument("--block-size", type=int, default=512, help="bytes per block (default 512)")
    m.add_argument("--json", action="store_true", help="one JSON object per trace")
    m.set_defaults(func=metrics_main)
    s = bsub.add_parser("study", help="correlate each metric with run time (fio; He, Sun and Yin, IPDPS Workshops 2013, Table 1)")
    s.add_argument("directory", help="where fio reads and writes its files (a scratch directory)")
    s.add_argument("--out", help="NetCDF file for the runs")
    s.add_argument("--sizes", default="4k,8k,16k,32k,64k,128k,256k,512k,1m,2m,4m,8m")
    s.add_argument("--jobs", default="1,2,3,4,5,6,7,8")
    s.add_argument("--spacings", default="8,64,256,1024,4096")
    s.add_argument("--total", default="32m", help="bytes per run of the size/concurrency sets")
    s.add_argument("--reps", type=int, default=1)
    s.add_argument("--direct", action="store_true", help="O_DIRECT reads (bypass the page cache)")
    s.set_defaults(func=study_main)
    p.set_defaults(func=lambda args: (p.print_help(), 2)[1])


def metrics_main(args) -> int:
    # deferred: every command module loads for `abtlab --help` (see commands/__init__)
    from ..bps import metrics
    from ..trace.readers import read
    for path in args.paths:
        res = metrics(read(path, fmt=args.format), block_size=args.block_size)
        if args.json:
            print(json.dumps({"path": path, **res}))
        else:
            print(f"{path}: BPS {res['bps']:.6g} blocks/s  IOPS {res['iops']:.6g}  "
                  f"bandwidth {res['bandwidth']:.6g} B/s  ARPT {res['arpt']:.6g} s  "
                  f"({res['ops']} calls, {res['blocks']:.0f} blocks, overlapped I/O "
                  f"{res['overlap_s']:.6g} s of {res['elapsed_s']:.6g} s)")
    return 0


def study_main(args) -> int:
    # deferred: every command module loads for `abtlab --help` (see commands/__init__)
    from ..bps.study import compare_with_paper, correlations, run_study
    ds = run_study(args.directory, sizes=_int_list("--sizes", args.sizes),
                   jobs=_int_list("--jobs", args.jobs), spacings=_int_list("--spacings", args.spacings),
                   total_bytes=_int_list("--total", args.total)[0], reps=args.reps,
                   direct=args.direct, quiet=False)
    if args.out:
        ds.to_netcdf(args.out, engine="h5netcdf")
    table = compare_with_paper(correlations(ds))
    print(table.to_string(index=False, float_format=lambda x: f"{x:.3f}"))
    return 0
