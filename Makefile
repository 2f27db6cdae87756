# make demo: the main job end to end, ending in an HTML report.
# make test: the whole test suite.
# Both do all of their own set-up: Debian packages, .venv, pip install -e ., C build.
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.abtlab-installed
DEBS := e2fsprogs util-linux fio strace psmisc fuse3 libfuse3-dev pkg-config chromium
DEMO_OUT ?= demo-out

.PHONY: demo test setup debs backends bench clean

setup: $(STAMP) backends

debs:
	@missing=""; for p in $(DEBS); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then echo "installing Debian packages:$$missing"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	  else echo "not root: skipping Debian packages$$missing (real-kernel runs need them)"; fi; fi

$(STAMP): pyproject.toml | debs
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test,fast]'
	$(PY) -m ipykernel install --sys-prefix --name python3 --display-name "Python 3 (abtlab)" >/dev/null
	touch $(STAMP)

backends:
	$(MAKE) -s -C backends

demo: setup
	$(VENV)/bin/abtlab demo --out $(DEMO_OUT)

test: setup
	$(PY) -m pytest -q -ra

bench: setup
	$(PY) -m benchmarks

clean:
	$(MAKE) -C backends clean
	rm -rf $(DEMO_OUT)
