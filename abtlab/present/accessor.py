"""`ds.abt.*`: run-dataset helpers without subclassing Dataset, registered by `abtlab.load`,
`abtlab.run` and `abtlab.sweep_spec` (the package's own modules call what these wrap)."""
from __future__ import annotations

import xarray as xr

from ..data import run_frames, runs
from ..stats import slowdown
from ..stats.intervals import point_summary
from .plots import plot_metric, plot_throughput, plot_unblocked
from .summary import summary_frame

__all__ = ["AbtAccessor"]


@xr.register_dataset_accessor("abt")
class AbtAccessor:
    """Helpers on a run dataset, as `ds.abt.<method>`.

    Registered when `abtlab.load`, `abtlab.run` or `abtlab.sweep_spec` is first called
    (or on `import abtlab.present.accessor`).

    Examples
    --------
    >>> import abtlab
    >>> ds = abtlab.load("data/samples/iozone_64t_loop_ext4_emulated.nc")
    >>> ds.abt.summary("throughput")  # doctest: +SKIP
    """

    def __init__(self, ds):
        self._ds = ds

    def summary(self, var="throughput", tidy=False, level=0.95):
        """Mean, confidence interval, RSD and count of a variable at every point.

        Parameters
        ----------
        var : str, default "throughput"
            A data variable with a `rep` dim, e.g. "throughput", "throughput_fsync",
            "commits", "threads_clear_of_commits", "fcr". With tidy=True, None picks the
            run's headline (throughput, or the FCR for Metarates).
        tidy : bool, default False
            Return a pandas DataFrame, one row per point, instead of a Dataset.
        level : float, default 0.95
            Confidence level of the t-interval.

        Returns
        -------
        xarray.Dataset or pandas.DataFrame
            Dataset: the factor dims without `rep`; variables `mean`, `ci_low`,
            `ci_high` (a t-interval), `rsd` (relative standard deviation) and `n`
            (repetitions). DataFrame (tidy=True): a column per factor, then
            `<var> [<unit>]`, `ci_low [<unit>]`, `ci_high [<unit>]` (throughputs in
            MiB/s), `rsd`, `n`; its attrs hold the unit and the provenance.

        Examples
        --------
        >>> s = ds.abt.summary("throughput")  # doctest: +SKIP
        >>> s["mean"].sel(policy="ext4")      # doctest: +SKIP
        >>> ds.abt.summary(tidy=True)         # doctest: +SKIP
        """
        if tidy:
            return summary_frame(self._ds, var, level)
        return point_summary(self._ds, var, level, allow_all_nan=True)

    def slowdown(self, var="throughput", level=0.95):
        """Ratio of a variable to its value at the lowest frequency, per configuration.

        Parameters
        ----------
        var : str, default "throughput"
            The variable to compare across `freq_ghz`.
        level : float, default 0.95
            Confidence level of the intervals (Fieller's, paired by repetition when the
            sweep ran in blocked order).

        Returns
        -------
        xarray.Dataset
            The configuration dims and `freq_ghz`; variables `ratio`, `ci_low`,
            `ci_high`, `n` and `n_ref`. Below 1 means slower at that frequency.

        Examples
        --------
        >>> sd = ds.abt.slowdown()                        # doctest: +SKIP
        >>> sd["ratio"].sel(policy="ext4", freq_ghz=3.3)  # doctest: +SKIP
        """
        return slowdown(self._ds, var, level=level)

    def plot_throughput(self, facet=None, ax=None):
        """Plot throughput (or, for Metarates, the file creation rate) against frequency.

        One line per policy (mean and 95% CI band over repetitions); the title says
        whether the data is measured, emulated or simulated.

        Parameters
        ----------
        facet : str, optional
            A factor to draw one panel per level of (e.g. "threads"); other factors
            with several levels become separate lines.
        ax : matplotlib.axes.Axes or array of Axes, optional
            Where to draw (one per panel); a new figure when omitted.

        Returns
        -------
        matplotlib.figure.Figure

        Examples
        --------
        >>> fig = ds.abt.plot_throughput(facet="threads")  # doctest: +SKIP
        >>> fig.savefig("throughput.png")                  # doctest: +SKIP
        """
        return plot_throughput(self._ds, facet=facet, ax=ax)

    def plot(self, var, facet=None, ax=None):
        """Plot any variable against frequency, as `plot_throughput` does.

        Parameters
        ----------
        var : str
            A data variable with a `rep` dim, e.g. "throughput_fsync", "commits",
            "threads_clear_of_commits", "mean_commit_wait".
        facet : str, optional
            A factor to draw one panel per level of.
        ax : matplotlib.axes.Axes or array of Axes, optional
            Where to draw; a new figure when omitted.

        Returns
        -------
        matplotlib.figure.Figure

        Examples
        --------
        >>> fig = ds.abt.plot("commits", facet="threads")  # doctest: +SKIP
        """
        return plot_metric(self._ds, var, facet=facet, ax=ax)

    def plot_unblocked(self, facet=None):
        """The paper's unblocked threads (trace evidence) beside the threads clear of
        commits (span overlap), against frequency; see `abtlab.present.plots.plot_unblocked`.

        Parameters
        ----------
        facet : str, optional
            A factor to draw one column of panels per level of (e.g. "threads").

        Returns
        -------
        matplotlib.figure.Figure

        Examples
        --------
        >>> fig = ds.abt.plot_unblocked(facet="threads")  # doctest: +SKIP
        """
        return plot_unblocked(self._ds, facet=facet)

    def run_ids(self, **sel):
        """Run ids of the repetitions at a selection of points.

        A run id names one repetition of one point; `ops` and `commits` take it to
        return that run's raw records.

        Parameters
        ----------
        **sel
            Factor levels to select, as for `Dataset.sel` (e.g. `policy="ext4"`,
            `freq_ghz=3.3`); every point when empty.

        Returns
        -------
        numpy.ndarray
            Run ids (integers), flattened in the dataset's point and `rep` order;
            repetitions that have no run are left out.

        Examples
        --------
        >>> rid = ds.abt.run_ids(policy="ext4", freq_ghz=3.3)[0]  # doctest: +SKIP
        >>> ops, commits = ds.abt.ops(rid), ds.abt.commits(rid)   # doctest: +SKIP
        """
        return runs.run_ids(self._ds, **sel)

    def ops(self, run_id, frame=False):
        """Op records of one run.

        Parameters
        ----------
        run_id : int
            From `run_ids`.
        frame : bool, default False
            True: a pandas DataFrame, labelled (`abtlab.data.run_frames.ops_frame`):
            `tid`, `op` (open, write, fsync, ...), `flags` (direct|creat|...), `bytes`,
            `t_start_ns`, `t_end_ns`, `duration_ns`, in time order.

        Returns
        -------
        numpy.ndarray or pandas.DataFrame
            A structured array of `abtlab.trace.RECORD_DTYPE`: `tid`, `op` (a code of
            `abtlab.trace.Op`), `flags`, `bytes`, `t_start_ns`, `t_end_ns`
            (CLOCK_MONOTONIC, or the guest's clock); with frame=True the DataFrame.

        Examples
        --------
        >>> ops = ds.abt.ops(ds.abt.run_ids()[0])       # doctest: +SKIP
        >>> (ops["t_end_ns"] - ops["t_start_ns"]).max()  # doctest: +SKIP
        >>> df = ds.abt.ops(ds.abt.run_ids()[0], frame=True)             # doctest: +SKIP
        >>> df[df.op == "fsync"].duration_ns.describe()                  # doctest: +SKIP
        """
        return run_frames.ops_frame(self._ds, run_id) if frame else runs.ops(self._ds, run_id)

    def commits(self, run_id, frame=False):
        """Journal-commit table of one run.

        Parameters
        ----------
        run_id : int
            From `run_ids`.
        frame : bool, default False
            True: a pandas DataFrame (`abtlab.data.run_frames.commits_frame`): `tid`,
            `start_ns`, `locking_ns`, `flushing_ns`, `logging_ns`, `end_ns`,
            `duration_ns` (end - start), `handles`, `blocks`.

        Returns
        -------
        dict of str to numpy.ndarray or pandas.DataFrame
            One array per column, one element per commit: `tid`, `start`, `locking`,
            `flushing`, `logging`, `end` (ns), `handles`, `blocks`; with frame=True the
            DataFrame.

        Examples
        --------
        >>> c = ds.abt.commits(ds.abt.run_ids(policy="ext4")[0])  # doctest: +SKIP
        >>> len(c["tid"])                                         # doctest: +SKIP
        >>> ds.abt.commits(rid, frame=True).duration_ns.median()  # doctest: +SKIP
        """
        if frame:
            return run_frames.commits_frame(self._ds, run_id)
        return runs.commits(self._ds, run_id)
