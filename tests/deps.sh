#!/bin/sh
# Installs the Debian packages given as arguments that are not installed
# yet. Quick when everything is there: one dpkg-query, no apt.
set -e
missing=""
for p in "$@"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed"; then
        missing="$missing $p"
    fi
done
[ -z "$missing" ] && exit 0
echo "deps: installing$missing"
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
# pkg:arch names a package of another architecture (the aarch64 agent's
# libraries): dpkg must know that architecture first.
for p in $missing; do
    case $p in
    *:*)
        arch=${p#*:}
        dpkg --print-foreign-architectures | grep -qx "$arch" ||
            $SUDO dpkg --add-architecture "$arch"
        ;;
    esac
done
$SUDO apt-get update -qq || true
# shellcheck disable=SC2086
$SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
