"""abtlab.present.report: items, grids, parameter checks, and a batch with a failing item."""
import sys

import nbformat
import pytest

from abtlab.present import report
from abtlab.errors import ConfigError
from abtlab.present.report import Item, load_grid, parse_value, run_batch


def _notebook(path, params_src, body):
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    p = nbformat.v4.new_code_cell(params_src)
    p.metadata["tags"] = ["parameters"]
    nb.cells = [p, nbformat.v4.new_code_cell(body)]
    nbformat.write(nb, path)
    return path


@pytest.fixture
def tiny(tmp_path):
    """A notebook that plots, and one that fails when fail=True."""
    plot = _notebook(tmp_path / "plot.ipynb", "n = 3\n",
                     "%matplotlib inline\nimport sys, matplotlib.pyplot as plt\n"
                     "print('PREFIX', sys.prefix)\nfig, ax = plt.subplots()\nax.plot(range(n))\n")
    fail = _notebook(tmp_path / "fail.ipynb", "fail = True\n",
                     "if fail:\n    raise ValueError('broken on purpose')\nprint('fine')\n")
    return plot, fail


def test_parse_value():
    assert parse_value("3") == 3 and parse_value("2.5") == 2.5
    assert parse_value("true") is True and parse_value("None") is None
    assert parse_value("sim") == "sim"


def test_unknown_notebook_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="notebook"):
        Item(tmp_path / "nope.ipynb")


def test_item_names_and_notebook_dir():
    it = Item("01_slowdown", {"data": "sim", "reps": 2})
    assert it.notebook == report.NOTEBOOK_DIR / "01_slowdown.ipynb"
    assert it.name == "01_slowdown__data-sim_reps-2"


def test_grid_expands_combinations(tmp_path, tiny):
    g = tmp_path / "grid.toml"
    g.write_text('[[run]]\nnotebook = "plot.ipynb"\nname = "p"\nparameters = {}\n'
                 'grid = { n = [1, 2, 3] }\n\n[[run]]\nnotebook = "fail.ipynb"\n')
    items = load_grid(g)
    assert [i.name for i in items] == ["p__n-1", "p__n-2", "p__n-3", "fail"]
    assert [i.parameters for i in items[:3]] == [{"n": 1}, {"n": 2}, {"n": 3}]


@pytest.mark.parametrize("text, field", [
    ("", "grid.run"),
    ('[[run]]\nname = "x"\n', "run[0].notebook"),
    ('[[run]]\nnotebook = "plot.ipynb"\ncolour = 1\n', "run[0].colour"),
    ('[[run]]\nnotebook = "plot.ipynb"\ngrid = { n = 3 }\n', "run[0].grid.n"),
    ("[[run]\n", "grid"),
])
def test_bad_grid(tmp_path, tiny, text, field):
    g = tmp_path / "bad.toml"
    g.write_text(text)
    with pytest.raises(ConfigError) as e:
        load_grid(g)
    assert e.value.field == field


def test_unknown_parameter_and_bad_workers(tmp_path, tiny):
    plot, _ = tiny
    with pytest.raises(ConfigError, match="parameter colour"):
        run_batch([Item(plot, {"colour": "red"})], tmp_path / "out", progress=None)
    with pytest.raises(ConfigError, match="workers"):
        run_batch([Item(plot)], tmp_path / "out", workers=0, progress=None)
    with pytest.raises(ConfigError, match="name"):
        run_batch([Item(plot, name="a"), Item(plot, name="a")], tmp_path / "out", progress=None)


def test_batch_reports_failure_and_goes_on(tmp_path, tiny):
    """One item fails, the others run; the index shows status, time and the error; the
    kernel is this environment's Python; figures are embedded in the HTML."""
    plot, fail = tiny
    items = [Item(fail, {}, "fails"), Item(plot, {"n": 5}, "plots"), Item(fail, {"fail": False}, "passes")]
    outcomes, index = run_batch(items, tmp_path / "out", workers=2, progress=None)
    by = {o.item.name: o for o in outcomes}
    assert [o.item.name for o in outcomes] == ["fails", "plots", "passes"]
    assert by["fails"].status == "failed" and "broken on purpose" in by["fails"].error
    assert by["plots"].status == "ok" and by["passes"].status == "ok"
    page = index.read_text()
    assert "2 of 3 notebooks ran without error" in page
    assert "broken on purpose" in page and 'href="plots.html"' in page and 'href="fails.html"' in page
    html = by["plots"].html.read_text()
    assert 'src="data:image/png;base64,' in html
    assert f"PREFIX {sys.prefix}" in by["plots"].ipynb.read_text()


def test_cli_report_exit_status(tmp_path, tiny, capsys):
    from abtlab.cli import main
    plot, fail = tiny
    assert main(["report", str(plot), "-p", "n", "2", "--out", str(tmp_path / "a")]) == 0
    assert (tmp_path / "a" / "index.html").is_file()
    assert main(["report", str(fail), "--out", str(tmp_path / "b")]) == 1
    assert "0 ok, 1 failed" in capsys.readouterr().out
    assert main(["report", "--out", str(tmp_path / "c")]) == 2      # neither notebooks nor --grid


def test_kernel_channels_are_encrypted_so_the_kernel_does_not_warn(tmp_path, tiny, capfd):
    """ipykernel >= 7.3 prints a plain-text warning on every start over unencrypted TCP;
    where CurveZMQ is there, a batch asks for encryption and the output stays clean."""
    zmq = pytest.importorskip("zmq")
    if not zmq.has("curve"):
        pytest.skip("pyzmq without CurveZMQ")
    out = report.execute(Item(tiny[0], {}, "plots"), tmp_path / "out")
    assert out.status == "ok"
    err = capfd.readouterr().err
    assert "without encryption" not in err
    assert report._kernel_config()["KernelManager"]["transport_encryption"] == "auto"
