# make demo: the main job end to end, ending in an HTML report.
# make test: the whole test suite.
# Both do all of their own set-up first (scripts/setup.sh): Debian packages, .venv with
# `pip install -e '.[all,test]'` (every extra), the C programs, qemu 8+, the guest kernel and initramfs.
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
DEMO_OUT ?= demo-out
export VENV

.PHONY: demo test setup native bench clean

setup:
	@bash scripts/setup.sh

native:
	$(MAKE) -s -C native

demo: setup
	$(VENV)/bin/abtlab demo --out $(DEMO_OUT)

test: setup
	$(PY) -m pytest -q -ra --durations=25 -n 2 --dist loadscope --no-loadscope-reorder

bench: setup
	$(PY) -m benchmarks

clean:
	$(MAKE) -C native clean
	rm -rf $(DEMO_OUT)
