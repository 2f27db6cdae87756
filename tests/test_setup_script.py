"""scripts/setup.sh's steps say they are alive: a heartbeat with the elapsed time while a
quiet step (pip, a kernel build) runs, and the step's time when it ends."""
import re
import subprocess
from pathlib import Path

SETUP = Path(__file__).resolve().parents[1] / "scripts" / "setup.sh"


def _helpers() -> str:
    """The script's say/fail/beat/step definitions, without running the set-up."""
    text = SETUP.read_text()
    start, end = text.index("say() {"), text.index("# debs PACKAGE")
    return text[start:end]


def test_a_long_step_prints_a_heartbeat_with_its_elapsed_time(tmp_path):
    script = (f"log_dir={tmp_path}\nABTLAB_SETUP_HEARTBEAT=1\n{_helpers()}\n"
              "step 'slow thing' sleep 3\nstep 'failing thing' false\n")
    out = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=60)
    lines = out.stdout.splitlines()
    beats = [ln for ln in lines if re.fullmatch(r"setup: slow thing: still running, \d+ s so far", ln)]
    assert len(beats) >= 1, out.stdout
    assert re.search(r"setup: slow thing: done in \d+ s", out.stdout)      # a loaded machine: more than 3
    assert "setup: FAILED: failing thing" in out.stdout and out.returncode == 1
