#!/usr/bin/env bash
# Make sure Oclgrind (Debian's OpenCL device simulator, for `make check-kernels`) is installed;
# install it with apt-get when running as root. --optional: when it cannot be installed, say so
# and succeed (make test then skips the Oclgrind tests).
#
# Oclgrind is used only through its `oclgrind` wrapper command, which preloads the simulator's
# OpenCL runtime into the one command it runs. It must never be registered as an ICD in
# /etc/OpenCL/vendors: every other OpenCL program would then see it beside PoCL. Debian 12's
# package registers none; should a package ever do so, its .icd file is moved to
# /opt/oclgrind-icd (reach it with OCL_ICD_VENDORS=/opt/oclgrind-icd).
set -euo pipefail
optional=0
[ "${1:-}" = "--optional" ] && optional=1

unregister_icd() {
    local f
    for f in /etc/OpenCL/vendors/*oclgrind*.icd; do
        [ -e "$f" ] || continue
        if [ -w /etc/OpenCL/vendors ]; then
            mkdir -p /opt/oclgrind-icd
            mv "$f" /opt/oclgrind-icd/
            echo "clnn: moved $f to /opt/oclgrind-icd/ so that PoCL stays the only ICD" >&2
        else
            echo "clnn: $f registers Oclgrind as an ICD for every program; remove it" >&2
        fi
    done
}

if command -v oclgrind >/dev/null; then
    unregister_icd
    exit 0
fi
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null; then
    echo "clnn: installing oclgrind with apt-get" >&2
    export DEBIAN_FRONTEND=noninteractive
    # update only when the package is unknown to apt (a fresh machine's empty lists)
    apt-cache show oclgrind >/dev/null 2>&1 || apt-get update -qq
    if apt-get install -y -qq oclgrind >/dev/null; then
        unregister_icd
        command -v oclgrind >/dev/null && exit 0
    fi
    echo "clnn: apt-get could not install oclgrind" >&2
    [ "$optional" = 1 ] && exit 0
    exit 1
fi
if [ "$optional" = 1 ]; then
    echo "clnn: oclgrind is not installed; the Oclgrind kernel checks will be skipped" \
         "(sudo apt-get install -y oclgrind)" >&2
    exit 0
fi
cat >&2 <<MSG
clnn: oclgrind is not installed (needed by make check-kernels). Install it, then run make again:

    sudo apt-get update && sudo apt-get install -y oclgrind
MSG
exit 1
