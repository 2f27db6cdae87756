"""abtlab.bayes fit time and ESS per second: nutpie vs PyMC's own NUTS side by side,
and the hierarchical and mechanistic models on a sweep of a few thousand runs.

Run: .venv/bin/python -m benchmarks.bayes [--reps 30] [--draws 1000] [--skip-pymc]
Data: abtlab.sim sweeps (simulated, labelled so): IOzone, hdd7200, 4 cores,
threads 16..256 x file sizes x ext4/nojc x 4 frequencies x reps. Prints, per model
and sampler: runs, compile and sampling seconds, total, max R-hat, divergences, min
bulk ESS and ESS per second of sampling, and the nutpie/PyMC speed ratio.
"""
from __future__ import annotations

import argparse
import time

import abtlab.sim as sim
from abtlab.bayes.hierarchical import fit_hierarchical
from abtlab.bayes.mechanistic import fit_mechanistic

FREQS = [1.6, 2.0, 2.6, 3.3]


def sweep(reps, threads, sizes, policies, traces):
    return sim.simulate(reps=reps, seed=0, threads=threads, freq_ghz=FREQS, policy=policies,
                        file_size=sizes, record_size=32768, device="hdd7200-nocache", cores=4,
                        traces=traces)


def line(name, fit):
    d = fit.diagnostics
    print(f"{name:34s} runs={d['runs']:5d} compile={d['compile_s']:6.1f}s "
          f"sample={d['sample_s']:6.1f}s total={d['total_s']:6.1f}s rhat_max={d['rhat_max']:.3f} "
          f"div={d['divergences']:3d} ess_min={d['ess_bulk_min']:6.0f} ess/s={d['ess_per_s']:7.1f}")
    return d


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--draws", type=int, default=1000)
    ap.add_argument("--chains", type=int, default=4, help="4 chains make R-hat meaningful")
    ap.add_argument("--skip-pymc", action="store_true")
    a = ap.parse_args(argv)
    kw = dict(draws=a.draws, tune=a.draws, chains=a.chains, seed=0)
    t = time.perf_counter()
    big = sweep(a.reps, [16, 32, 64, 128, 256], [131072, 524288], ["ext4", "nojc"], False)
    print(f"simulated sweep: {big.sizes.get('rep')} reps, {int(big.throughput.count())} runs, "
          f"{time.perf_counter() - t:.1f}s (simulated data)")
    h = line("hierarchical nutpie (big sweep)", fit_hierarchical(big, sampler="nutpie", **kw))
    small = big.isel(rep=slice(0, 3))
    hs = line("hierarchical nutpie (3 reps)", fit_hierarchical(small, sampler="nutpie", **kw))
    if not a.skip_pymc:
        hp = line("hierarchical pymc (3 reps)", fit_hierarchical(small, sampler="pymc", **kw))
        print(f"nutpie / pymc: total time ratio {hs['total_s'] / hp['total_s']:.2f}, "
              f"ESS/s ratio {hs['ess_per_s'] / hp['ess_per_s']:.1f}")
    mech = sweep(max(a.reps // 3, 2), [16, 64, 256], [131072, 524288], ["ext4"], True)
    line("mechanistic nutpie (ext4, traces)", fit_mechanistic(mech, sampler="nutpie", **kw))
    print(f"big sweep under 2 min: {h['total_s'] < 120}")


if __name__ == "__main__":
    main()
