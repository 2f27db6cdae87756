#!/bin/bash
# debs.sh PKG...: install the Debian packages that are missing (apt-get update on failure).
# Exit 3 with the reason when they cannot be installed.
missing=""
for p in "$@"; do dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"; done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" != 0 ]; then echo "not root: cannot install$missing" >&2; exit 3; fi
export DEBIAN_FRONTEND=noninteractive
echo "installing Debian packages:$missing" >&2
apt-get install -y -qq $missing >/dev/null 2>&1 && exit 0
apt-get update -qq >/dev/null 2>&1
apt-get install -y -qq $missing >/dev/null 2>&1 && exit 0
echo "apt-get install$missing failed" >&2
exit 3
