"""What abtlab is and where its own files are: the version every dataset records, and the
source tree's C backends, notebooks and reference data (abtlab runs from its checkout)."""
from pathlib import Path

__version__ = "0.1.0"

ROOT = Path(__file__).resolve().parents[1]
BACKENDS = ROOT / "backends"
NOTEBOOKS = ROOT / "notebooks"
REFERENCE_DATA = ROOT / "data" / "reference"
