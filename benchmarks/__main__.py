"""`python -m benchmarks` lists the benchmarks; `python -m benchmarks NAME [args]` runs one."""
import importlib
import pkgutil
import sys
from pathlib import Path

names = sorted(m.name for m in pkgutil.iter_modules([str(Path(__file__).parent)]) if not m.name.startswith("_"))
if len(sys.argv) < 2 or sys.argv[1] not in names:
    print("benchmarks (run from the repository root):")
    for n in names:
        doc = (importlib.import_module(f"benchmarks.{n}").__doc__ or "").strip().splitlines()
        print(f"  python -m benchmarks.{n:16s} {doc[0] if doc else ''}")
    sys.exit(0 if len(sys.argv) < 2 else 2)
mod = importlib.import_module(f"benchmarks.{sys.argv[1]}")
sys.exit(mod.main(sys.argv[2:]))
