#!/usr/bin/env bash
# Set up sncheck on a fresh Debian/Ubuntu machine: system packages, then the package
# with its local (torch, CPU build) and test extras. Safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v /usr/sbin/sshd >/dev/null 2>&1 || ! command -v /usr/sbin/slurmd >/dev/null 2>&1; then
    # openssh-server: the SSH backend's tests start real sshd servers on loopback.
    # slurmctld, slurmd, slurm-client, munge: the Slurm tests start a real 4-node
    # cluster on loopback (tests/slurm_harness.py). Packages only: their services
    # are not enabled or started here.
    SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq openssh-server procps \
        slurmctld slurmd slurm-client munge >/dev/null
fi

# chromium: the report's browser tests drive it headless (tests/test_report_browser.py);
# poppler-utils: pdftotext reads back what the report prints to A4.
if ! command -v chromium >/dev/null 2>&1 || ! command -v pdftotext >/dev/null 2>&1; then
    SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium poppler-utils >/dev/null
fi

# pdsh: the 128-host SSH fan-out benchmark times sncheck beside `pdsh -R ssh`
# (tests/bench/bench_fanout_pdsh.py, under --benchmark-enable).
if ! command -v pdsh >/dev/null 2>&1; then
    SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq pdsh >/dev/null
fi

# prometheus, prometheus-node-exporter (promtool comes with prometheus): the metrics tests
# start a real node_exporter (textfile collector) and a real Prometheus on loopback
# (tests/test_outputs_real.py) on free ports, whether or not the packages started their own services.
if ! command -v prometheus >/dev/null 2>&1 || ! command -v prometheus-node-exporter >/dev/null 2>&1; then
    SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq prometheus prometheus-node-exporter >/dev/null
fi

# ibsim-utils, opensm, infiniband-diags: the fabric tests run a real (simulated) InfiniBand subnet:
# ibsim serves it, opensm assigns its LIDs, ibnetdiscover and perfquery read it through
# libumad2sim (tests/ibsim_harness.py; no kernel module, no root, no service started).
if ! command -v ibsim >/dev/null 2>&1 || ! command -v /usr/sbin/opensm >/dev/null 2>&1 \
        || ! command -v /usr/sbin/ibnetdiscover >/dev/null 2>&1; then
    SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq ibsim-utils opensm infiniband-diags >/dev/null
fi

python3 -m pip install -q --upgrade pip
# torch is pinned: 2.13.0 is the CPU build; an unpinned torch pulls a multi-GB CUDA build.
python3 -m pip install -q "torch==2.13.0"
python3 -m pip install -q -e ".[local,test,lint]"
# Under pyenv the new `sncheck` console script needs a shim.
if command -v pyenv >/dev/null 2>&1; then pyenv rehash || true; fi
