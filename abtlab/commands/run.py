"""`abtlab run BACKEND [factor lists] --out PATH`: sweep one backend's factors."""
from __future__ import annotations

import sys

__all__ = ["register"]


def register(sub):
    p = sub.add_parser("run", help="run a backend over lists of factor levels",
                       description="Lists are comma-separated; every combination x --reps is run "
                                   "in random interleaved order and written to --out.")
    p.add_argument("backend", help="iozone, metarates, sim, dio, locks, ... (abtlab doctor lists them)")
    p.add_argument("--threads", "--workers", dest="threads", help="threads (iozone) or workers (metarates)")
    p.add_argument("--file-size", dest="file_size", help="bytes per thread, e.g. 128k")
    p.add_argument("--record", "--record-size", dest="record_size", help="bytes per write, e.g. 32k")
    p.add_argument("--files", help="files per worker (metarates)")
    p.add_argument("--policy", help="ext4,nojc or ';'-separated specs: 'delayjc:window=16ms;ext4'")
    p.add_argument("--freq", help="emulated:1.6,3.3 | real:1.6,3.3 | native (sim: 1.6,3.3)")
    p.add_argument("--device", help="none, hdd7200 (the paper's 7200 rpm drive with its write cache), "
                   "hdd7200-nocache, ssd-sata, fixed:<time> (every request that long) or "
                   "'iops=120,bps=120M'")
    p.add_argument("--machine", help="host (default) or guest[:clock=virtual|host,cpus=N,shift=N,"
                   "depth=N,...]; ';' separates specs: 'host;guest:cpus=4'")
    p.add_argument("-f", "--factor", action="append", default=[], metavar="NAME=LIST",
                   help="another factor of the backend (e.g. -f block_size=4k,1m)")
    p.add_argument("-o", "--option", action="append", default=[], metavar="KEY=VALUE",
                   help="a backend option (e.g. -o workload=metarates, -o cores=4)")
    p.add_argument("--no-fsync", action="store_true", help="iozone with no fsync at all (not IOzone without -e: IOzone's default "
                        "still fsyncs each file, after its clock stops, as abtlab's default run "
                        "does; both throughputs are recorded, the write op's and with fsync)")
    p.add_argument("--direct", action="store_true", help="O_DIRECT writes")
    p.add_argument("--processes", action="store_true", help="metarates workers as processes")
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--warmup", type=int, default=1, help="discarded warm-up runs (default 1; a simulator's runs need none)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", required=True, help="output NetCDF path")
    p.add_argument("--resume", action="store_true",
                   help="continue an interrupted run from its finished runs (a simulated run "
                        "keeps them on disk once it has run a second, or when stopped by an "
                        "error or a signal; a kill -9 in its first second leaves nothing to "
                        "resume)")
    p.add_argument("--force", action="store_true",
                   help="replace what is at --out (a finished dataset, unfinished parts, a file)")
    p.add_argument("--no-wait", dest="wait", action="store_false",
                   help="fail at once if another real run holds this machine (default: wait)")
    p.add_argument("--keep-going", dest="keep_going", action="store_true",
                   help="a run that fails is left missing (listed in the dataset's failed_runs "
                        "and on stderr) and the sweep goes on; exit status 1 when any failed")
    p.add_argument("--quiet", action="store_true")
    p.set_defaults(func=main)


def _kv(items, field):
    from ..errors import ConfigError
    out = {}
    for it in items:
        if "=" not in it:
            raise ConfigError(field, it, "NAME=VALUE")
        k, v = it.split("=", 1)
        out[k.strip()] = _coerce(v.strip())
    return out


def _coerce(v):
    """'true'/'false' -> bool, numbers -> int/float; lists stay strings for the parsers."""
    low = v.lower()
    if low in ("true", "yes", "on"):
        return True
    if low in ("false", "no", "off"):
        return False
    for conv in (int, float):
        try:
            return conv(v)
        except ValueError:
            pass
    return v


# field names of abtlab.run -> the options of this command, for error messages
FLAGS = {"threads": "--threads", "file_size": "--file-size", "record_size": "--record",
         "files": "--files", "policy": "--policy", "freq": "--freq", "device": "--device",
         "freq_mode": "--freq", "reps": "--reps", "seed": "--seed", "out": "--out"}


def main(args):
    from ..errors import ConfigError
    try:
        return _main(args)
    except ConfigError as exc:    # name the option the user typed, not the keyword
        flag = FLAGS.get(exc.field.split(" ")[0])
        if flag is None or exc.field.startswith("-"):
            raise
        raise ConfigError(flag, exc.given, exc.accepted) from None


def _main(args):
    from ..sweep.runner import run
    factors = {k: getattr(args, k) for k in ("threads", "file_size", "record_size", "files",
                                             "policy", "device", "machine") if getattr(args, k) is not None}
    factors.update(_kv(args.factor, "--factor"))
    opts = _kv(args.option, "--option")
    if args.no_fsync:
        opts["fsync"] = False
    if args.direct:
        opts["direct"] = True
    if args.processes:
        opts["processes"] = True
    ds = run(args.backend, out=args.out, reps=args.reps, seed=args.seed, resume=args.resume,
             quiet=args.quiet, freq=args.freq, warmup=args.warmup,
             command="abtlab " + " ".join(sys.argv[1:]), force=args.force, wait=args.wait,
             dataset=False, keep_going=args.keep_going, **factors, **opts)
    # written and summarised without xarray
    from ..present.summary import summary_text
    print(summary_text(ds))
    print(f"wrote {args.out}: {_points(ds)}")
    return failed_runs(ds, "abtlab run")


def failed_runs(ds, name) -> int:
    """1, each failed run named on stderr, when a keep-going sweep left runs missing; else 0."""
    from ..data.schema import FAILED_RUNS
    text = ds.attrs.get(FAILED_RUNS)
    if not text:
        return 0
    lines = str(text).splitlines()
    print(f"{name}: {len(lines)} run{'s' * (len(lines) != 1)} failed, left missing (NaN, run id "
          f"-1; the dataset's attr {FAILED_RUNS}):", file=sys.stderr)
    for line in lines:
        print(f"  {line}", file=sys.stderr)
    return 1


def _points(ds) -> str:
    """'8 points x 100 repetitions': what the file holds, in the run's own terms."""
    from ..data import schema
    from ..present.summary import _arrays, headline
    run = _arrays(ds)
    var = headline(run)
    if var is None:
        return str(run.sizes)
    sizes = run.sizes
    dims = [d for d in run.variables[var][0] if d != schema.REP]
    n = 1
    for d in dims:
        n *= sizes[d]
    return f"{n} point{'s' * (n != 1)} x {sizes.get(schema.REP, 1)} repetitions"
