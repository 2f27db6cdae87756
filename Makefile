# make demo: the main job end to end, ending in an HTML report.
# make test: the whole test suite.
# Both do all of their own set-up first (scripts/setup.sh): Debian packages, .venv with
# `pip install -e '.[all,test]'` (every extra), the C programs, qemu 8+, the guest kernel and initramfs.
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
DEMO_OUT ?= demo-out
export VENV

.PHONY: demo test setup backends bench docs clean render gallery

setup:
	@bash scripts/setup.sh

# the C programs and preload libraries (backends/; the Python drivers are abtlab/backends)
backends:
	$(MAKE) -s -C backends

demo: setup
	$(VENV)/bin/abtlab demo --out $(DEMO_OUT)

test: setup
	$(PY) -m pytest -q -ra --durations=25 -n 2 --dist loadscope --no-loadscope-reorder

# the docs site, strict; NO_MKDOCS_2_WARNING: the theme's end-of-life banner (Material for
# MkDocs prints it as its templates load, before any hook could) is not abtlab's to show
docs:
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --quiet

# the numbers README.md and docs/ quote, rewritten from the stored results (data/results/)
render:
	$(PY) -m abtlab results render

# the gallery's executed notebooks (docs/gallery/, on the simulator), which the docs build shows
gallery:
	$(PY) -m abtlab results gallery

bench: setup
	$(PY) -m benchmarks

clean:
	$(MAKE) -C backends clean
	rm -rf $(DEMO_OUT)
