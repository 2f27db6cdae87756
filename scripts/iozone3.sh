#!/bin/bash
# iozone3.sh: install Debian's iozone3 (IOzone 3.489, bookworm's non-free component) so
# that the iozone-tool backend finds `iozone` on PATH, as a user's own IOzone would be.
# The .deb is fetched through a source list of our own (the system's apt sources are not
# changed; apt checks it against the archive's signed index) and installed with dpkg:
# iozone3 needs only libc, and an installed package is found by every shell, test and
# user without an environment variable. Exit 0 with the reason when this machine cannot
# have it (not root, not bookworm); the real-IOzone tests then skip and say so.
set -uo pipefail
present() { echo "$(command -v iozone), IOzone $(iozone -v 2>/dev/null | sed -n 's/.*Version \$Revision: \([0-9.]*\).*/\1/p')"; }
if command -v iozone >/dev/null; then present; exit 0; fi
[ "$(id -u)" = 0 ] || { echo "not root: not installing iozone3 (its tests skip)"; exit 0; }
. /etc/os-release
[ "${VERSION_CODENAME:-}" = bookworm ] || { echo "no bookworm non-free iozone3 for ${VERSION_CODENAME:-this system}"; exit 0; }
work=$(mktemp -d /tmp/abtlab-iozone3.XXXXXX)
trap 'rm -rf "$work"' EXIT
echo "deb http://deb.debian.org/debian bookworm non-free" > "$work/non-free.list"
apt_opts=(-o "Dir::Etc::SourceList=$work/non-free.list" -o "Dir::Etc::SourceParts=-"
          -o "Dir::State::Lists=$work/lists" -o "Dir::Cache=$work/cache" -o "APT::Get::List-Cleanup=0" -o "APT::Sandbox::User=root" -qq)
mkdir -p "$work/lists/partial" "$work/cache/archives/partial" "$work/debs"
apt-get "${apt_opts[@]}" update || { echo "apt-get update of bookworm non-free failed" >&2; exit 1; }
(cd "$work/debs" && apt-get "${apt_opts[@]}" download iozone3) || { echo "downloading iozone3 failed" >&2; exit 1; }
DEBIAN_FRONTEND=noninteractive dpkg -i "$work"/debs/iozone3_*.deb || exit 1
present
