#!/usr/bin/env bash
# Make sure an OpenCL platform is visible; install Debian's PoCL when it is not.
# (PyPI's pocl-binary-distribution is deliberately not used: its kernels fail to build on some
# CPUs with "unknown target CPU 'generic'".)
set -euo pipefail
PKGS="pocl-opencl-icd ocl-icd-libopencl1"

have_opencl() {
    ls /etc/OpenCL/vendors/*.icd >/dev/null 2>&1 && ldconfig -p 2>/dev/null | grep -q libOpenCL.so
}

if have_opencl; then
    exit 0
fi
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null; then
    echo "clnn: no OpenCL platform found; installing $PKGS with apt-get" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq $PKGS >/dev/null
    have_opencl && exit 0
    echo "clnn: $PKGS installed but still no OpenCL platform is visible" >&2
    exit 1
fi
cat >&2 <<MSG
clnn: no OpenCL platform is visible (no ICD in /etc/OpenCL/vendors or no libOpenCL.so).
Install Debian's PoCL and the ICD loader, then run make again:

    sudo apt-get update && sudo apt-get install -y $PKGS
MSG
exit 1
