"""A first discriminating guest experiment for the kernel history (docs/kernel-history.md).

IOzone's initial write (N threads, file/record size, fsync) in the qemu TCG guest, per
kernel (stock 6.1, 6.1-legacy, or one knob), at 3.3 and 1.6 GHz emulated by CPU-time
dilation (F = 3.3/f, so 3.3 GHz is the guest's own speed), on a qemu-throttled disk.
Prints one line per boot and the 3.3/1.6 throughput ratio per kernel. Emulated
frequency, real (guest) kernel; wall clock of a TCG guest, so absolute numbers are not
a real machine's. Written for the one-point `guest.boot` harness (virtio disk, qemu
throttle) it was measured with; it needs porting to `guest.boot_batch`. Run as root,
under the shared lock, e.g.:

    flock /tmp/abtlab-real.lock python examples/kernel_history_probe.py --threads 256 \
        --iops 500 --reps 2
"""
import argparse
import re
import statistics
import tempfile
from pathlib import Path

from abtlab import trace
from abtlab.backends.kdelayjc import _no_commits
from abtlab.model.measures import measures
from abtlab.system import guest, kernel_knobs as kk

SIZES = {"k": 1024, "m": 1024 ** 2}
SHADOW = re.compile(rb"(\d+) shadow waits, (\d+) us shadow wait")


def _bytes(text: str) -> int:
    return int(text[:-1]) * SIZES[text[-1].lower()] if text[-1].isalpha() else int(text)


def one_boot(knobs, args, ghz, workdir) -> dict:
    dilate = 3.3 / ghz
    workload = (f"/abt/abt-iozone --threads {args.threads} --file-size {args.file_size} "
                f"--record-size {args.record_size} --dir /mnt/data --dilate {dilate:.4f} "
                "--trace /out/ops.trace\n")
    run = guest.GuestRun(argv=["sh", "-c", kk.shell_script(knobs, "vda") + workload])
    res = guest.boot(run, workdir, image_mb=args.image_mb, iops=args.iops, smp=args.smp,
                     timeout=900)
    if res.rc != 0:
        raise SystemExit(f"abt-iozone exited {res.rc}: {res.stderr[-500:]}")
    (workdir / "ops.trace").write_bytes(res.files["ops.trace"])
    ops = trace.read(workdir / "ops.trace", kind=trace.Kind.OPS)
    m = measures(ops, _no_commits(), "iozone", file_size=_bytes(args.file_size))
    w0, us0 = map(int, SHADOW.search(res.files["info.before"]).groups())
    w1, us1 = map(int, SHADOW.search(res.files["info.after"]).groups())
    return {"throughput": m["throughput"],
            "commits": res.info_after["transactions"] - res.info_before["transactions"],
            "shadow_waits": w1 - w0, "shadow_wait_ms": (us1 - us0) / 1000, "wall_s": res.wall_s}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=256)
    ap.add_argument("--file-size", default="128k")
    ap.add_argument("--record-size", default="32k")
    ap.add_argument("--iops", type=int, default=500, help="qemu throttling.iops-total")
    ap.add_argument("--smp", type=int, default=2)
    ap.add_argument("--image-mb", type=int, default=256)
    ap.add_argument("--reps", type=int, default=1)
    ap.add_argument("--kernels", default="6.1,6.1-legacy",
                    help="comma list: a preset, or preset:legacy=...:sched=...:iosched=...")
    args = ap.parse_args()
    for spec in args.kernels.split(","):
        name, *items = spec.split(":")
        knobs = kk.parse_knobs(name, **dict(i.split("=", 1) for i in items))
        tput = {}
        for rep in range(args.reps):
            for ghz in (1.6, 3.3):
                with tempfile.TemporaryDirectory() as tmp:
                    r = one_boot(knobs, args, ghz, Path(tmp))
                tput.setdefault(ghz, []).append(r["throughput"])
                print(f"{knobs.label} {ghz} GHz rep {rep}: " +
                      ", ".join(f"{k} {v:.4g}" for k, v in r.items()), flush=True)
        ratio = statistics.mean(tput[3.3]) / statistics.mean(tput[1.6])
        print(f"{knobs.label}: throughput 3.3/1.6 = {ratio:.3f} "
              f"({args.reps} rep(s) per frequency)", flush=True)


if __name__ == "__main__":
    main()
