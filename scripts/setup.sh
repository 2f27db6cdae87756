#!/usr/bin/env bash
# setup.sh: provision everything `make test` and `make demo` need, in order, before any
# test runs: the Debian packages, the Python environment, the C programs, IOzone, a qemu 8+ (the
# virtual clock with several vCPUs needs it) and its build with the lock-step clock, the
# guest's Linux 6.1 kernel and initramfs,
# and Linux 3.4.2 when its source is on this machine. One progress line per step with its
# time. Nothing is fetched or installed later by a test: a test that needs what this
# machine cannot have skips and says why.
#
# Environment: VENV (default .venv), ABTLAB_SETUP_GUEST=0 to leave the guest out.
set -uo pipefail
cd "$(dirname "$0")/.."
VENV=${VENV:-.venv}
PY=$VENV/bin/python
STAMP=$VENV/.abtlab-installed
# the guest's kernel build (linux-source-6.1 and the toolchain), installed first so that
# the build starts while the rest installs; then real-kernel runs, tracing, FUSE disk,
# screenshots, the guest's initramfs (busybox, cpio) and qemu, and a BLAS PyTensor's C ops
# link (libopenblas-dev: -lblas)
KERNEL_DEBS=(build-essential bc bison flex libelf-dev libssl-dev lz4 perl linux-source-6.1)
DEBS=(e2fsprogs util-linux fio strace psmisc fuse3 libfuse3-dev pkg-config chromium
      "${KERNEL_DEBS[@]}" busybox-static cpio qemu-system-x86 libopenblas-dev)
t_all=$(date +%s)
log_dir=$(mktemp -d /tmp/abtlab-setup.XXXXXX)

say() { echo "setup: $*"; }
fail() { say "FAILED: $1 (log: $2)"; tail -n 20 "$2" >&2; exit 1; }
# beat PID NAME T0: while PID runs, a line every HEARTBEAT s with the time since T0, so a
# long quiet step (pip, a kernel build) is seen to be alive
HEARTBEAT=${ABTLAB_SETUP_HEARTBEAT:-20}
beat() {
    local pid=$1 name=$2 t0=$3 n=0
    while kill -0 "$pid" 2>/dev/null; do
        sleep 1; n=$((n + 1))
        if [ $((n % HEARTBEAT)) -eq 0 ] && kill -0 "$pid" 2>/dev/null; then
            say "$name: still running, $(( $(date +%s) - t0 )) s so far"
        fi
    done
}
# step NAME CMD...: run CMD with its output in a log (a heartbeat while it runs), print
# one line with the time it took
step() {
    local name=$1 t0 pid; shift; t0=$(date +%s)
    local log="$log_dir/${name// /-}.log"
    say "$name ..."
    "$@" >"$log" 2>&1 &
    pid=$!
    beat "$pid" "$name" "$t0"
    wait "$pid" || fail "$name" "$log"
    say "$name: ${DONE_MSG:-done} in $(( $(date +%s) - t0 )) s"
}

# debs PACKAGE...: install those of them that are missing
debs() {
    local missing=()
    for p in "$@"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
    if [ ${#missing[@]} -eq 0 ]; then echo "all present"; return 0; fi
    if [ "$(id -u)" != 0 ]; then
        echo "not root: not installing ${missing[*]} (real-kernel and guest runs need them)" >&2
        return 0
    fi
    echo "installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    # once per set-up (a step runs in a subshell: the mark is a file)
    if [ ! -f "$log_dir/apt-updated" ]; then apt-get update -qq || return 1; touch "$log_dir/apt-updated"; fi
    apt-get install -y -qq "${missing[@]}"
}

python_env() {
    # the install also compiles the `abtlab` command (backends/start/abt-start.c, by setup.py)
    if [ -f "$STAMP" ] && [ "$STAMP" -nt pyproject.toml ] && [ "$STAMP" -nt setup.py ] &&
        [ "$STAMP" -nt backends/start/abt-start.c ]; then echo "up to date"; return 0; fi
    test -x "$PY" || python3 -m venv "$VENV" || return 1
    "$PY" -m pip install -q --upgrade pip || return 1
    # every extra: make demo and make test use them all. compat: the checkout as a path
    # line, not setuptools' import hook, which runs in every start-up (`site`), where a
    # Ctrl-C printed "Fatal Python error: init_import_site" (benchmarks/faults_paths.py)
    "$PY" -m pip install -q -e '.[all,test]' --config-settings editable_mode=compat || return 1
    "$PY" -m ipykernel install --sys-prefix --name python3 --display-name "Python 3 (abtlab)" || return 1
    touch "$STAMP"
}

guest_wanted() { [ "${ABTLAB_SETUP_GUEST:-1}" != 0 ] && [ "$(uname -m)" = x86_64 ]; }

# the guest kernel compiles for minutes on its own cores while the other Debian packages
# and pip download: only its own packages come before it
kernel_pid=""
if guest_wanted; then
    step "Debian packages for the guest kernel" debs "${KERNEL_DEBS[@]}"
    kernel_log="$log_dir/guest-kernel.log"; t_kernel=$(date +%s)
    say "guest kernel (Linux 6.1 + abtlab's patches): building in the background (cached per patch series)"
    (make -s -C backends/kernel kernel && date +%s >"$log_dir/kernel.end") >"$kernel_log" 2>&1 &
    kernel_pid=$!
fi
step "Debian packages" debs "${DEBS[@]}"
step "Python environment ($VENV)" python_env
step "C programs" make -s -C backends
# the real IOzone (Debian's iozone3, non-free) for the iozone-tool backend and its tests
step "IOzone" scripts/iozone3.sh
say "IOzone: $(tail -n1 "$log_dir/IOzone.log")"
# the simulator's kernel compiled ahead of time (abtlab.sim.aot), so a new process runs it
# without loading numba; without it the simulator uses numba's JIT, so a failure only warns
t0=$(date +%s)
if "$PY" -c 'import sys; from abtlab.sim.aot import main; sys.exit(main())' build --if-absent \
        >"$log_dir/sim-aot.log" 2>&1; then
    say "simulator kernel, compiled ahead of time: done in $(( $(date +%s) - t0 )) s"
else
    say "simulator kernel, compiled ahead of time: NOT built, the simulator uses numba's JIT" \
        "(log: $log_dir/sim-aot.log)"
fi
if guest_wanted; then
    step "qemu" bash -c 'read -r bin data < <(backends/kernel/qemu.sh) && "$bin" --version | head -n1'
    say "qemu: $(head -n1 "$log_dir/qemu.log")"
    # the lock-step clock's qemu (clock=lockstep): the same version from Debian's source with
    # abtlab's patch, compiled beside the guest kernel (cached per patch)
    lockstep_log="$log_dir/qemu-lockstep.log"; t_lockstep=$(date +%s)
    say "qemu with the lock-step clock: building in the background (cached per patch)"
    (backends/kernel/qemu-lockstep.sh && date +%s >"$log_dir/lockstep.end") >"$lockstep_log" 2>&1 &
    lockstep_pid=$!
    step "guest initramfs" make -s -C backends/kernel out/initramfs.cpio.gz
    beat "$kernel_pid" "guest kernel (building since the start)" "$t_kernel"
    wait "$kernel_pid" || fail "guest kernel" "$kernel_log"
    if wait "$lockstep_pid"; then
        say "qemu with the lock-step clock: $(tail -n1 "$lockstep_log" | cut -d' ' -f1) in $(( $(cat "$log_dir/lockstep.end") - t_lockstep )) s"
    else   # clock=lockstep then refuses with the reason; the rest of the guest works
        say "qemu with the lock-step clock: NOT built ($(tail -n1 "$lockstep_log")); clock=lockstep refuses with the reason"
    fi
    say "guest kernel: $(readlink -f backends/kernel/out/bzImage) in $(( $(cat "$log_dir/kernel.end") - t_kernel )) s"
    if backends/kernel/build-kernel-3.4.2.sh --check >/dev/null 2>"$log_dir/k342-check.log"; then
        step "Linux 3.4.2 kernel" backends/kernel/build-kernel-3.4.2.sh
    else
        say "Linux 3.4.2 kernel: skipped, its source is not on this machine (its tests skip and say so)"
    fi
fi
say "ready in $(( $(date +%s) - t_all )) s"
rm -rf "$log_dir"
