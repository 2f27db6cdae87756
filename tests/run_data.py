"""Constructed run datasets with known answers, shared by the statistics tests."""
import numpy as np
import xarray as xr


def make_run(ratio=None, reps=6, rsd=0.1, seed=0, base=1e9, policies=("ext4", "nojc"),
             freqs=(1.6, 3.3), threads=(64, 256)):
    """Normal throughput; the mean at the highest freq is base * ratio[policy]."""
    ratio = ratio or {p: 1.0 for p in policies}
    rng = np.random.default_rng(seed)
    mean = np.array([[[base * (ratio[p] if f == max(freqs) else 1.0)] * len(threads)
                      for f in freqs] for p in policies])
    x = rng.normal(mean[..., None], rsd * mean[..., None], mean.shape + (reps,))
    ds = xr.Dataset({"throughput": (("policy", "freq_ghz", "threads", "rep"), x,
                                     {"units": "bytes/s"})},
                    coords={"policy": list(policies), "freq_ghz": list(freqs),
                            "threads": list(threads), "rep": np.arange(reps)},
                    attrs={"freq_mode": "simulated", "backend": "test", "command": "make_run"})
    return ds
