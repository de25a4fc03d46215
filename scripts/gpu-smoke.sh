#!/usr/bin/env bash
# sncheck on a host with NVIDIA GPUs: the checks CI cannot run (it never has a GPU).
#
#   bash scripts/gpu-smoke.sh            # from the repository root or anywhere
#   OUT=runs/smoke bash scripts/gpu-smoke.sh
#
# 1. records a golden curve for this GPU count on nccl: fixtures/golden/local-<n>-nccl.json
#    (sncheck golden record, local backend, one rank per visible GPU);
# 2. runs the pre-upgrade gate (connectivity, stress, golden against that curve) on the
#    local backend with nccl on every visible GPU;
# 3. runs the host-fact checks against this host's own nvidia-smi, ibstat and dcgmi
#    (sncheck node-check --no-collectives --no-drain: the SSH backend's checks, run here);
# and exits non-zero if any step fails: 3 when this host cannot run it (no nvidia-smi,
# no CUDA torch), else 1. What each step printed is in $OUT (default runs/gpu-smoke-<time>).
set -uo pipefail

cd "$(dirname "$0")/.." || exit 3
ROOT=$PWD
export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"
PY=${PYTHON:-python3}
OUT=${OUT:-runs/gpu-smoke-$(date -u +%Y%m%dT%H%M%SZ)}

say() { printf 'gpu-smoke: %s\n' "$*" >&2; }

if ! command -v nvidia-smi >/dev/null 2>&1; then
    say "nvidia-smi not found on the PATH: this script needs a host with NVIDIA GPUs and their driver"
    exit 3
fi
if ! N=$(nvidia-smi --query-gpu=index --format=csv,noheader 2>"/tmp/gpu-smoke-nvsmi.$$" | grep -c .); then
    N=0
fi
if [ "$N" -lt 1 ]; then
    say "nvidia-smi lists no GPUs: $(tail -n 2 "/tmp/gpu-smoke-nvsmi.$$" 2>/dev/null | tr '\n' ' ')"
    rm -f "/tmp/gpu-smoke-nvsmi.$$"
    exit 3
fi
rm -f "/tmp/gpu-smoke-nvsmi.$$"
if ! "$PY" -c 'import sys, torch, torch.distributed as d
sys.exit(0 if torch.cuda.is_available() and d.is_nccl_available() and torch.cuda.device_count() >= int(sys.argv[1]) else 1)' "$N"; then
    say "torch with CUDA and nccl that sees all $N GPUs is needed (pip install torch with CUDA)"
    exit 3
fi

mkdir -p "$OUT" || exit 3
say "$N GPUs; output in $OUT"
failed=()

# 1. the golden curve for this GPU count on nccl
CURVE="fixtures/golden/local-$N-nccl.json"
say "recording $CURVE"
if ! "$PY" -m sncheck golden record --out "$CURVE" --backend local --cards "$N" 2>&1 | tee "$OUT/golden-record.log"; then
    failed+=("golden record")
fi

# 2. the pre-upgrade gate, judged against that curve
PLAYBOOK="$OUT/gpu-smoke-gate.yaml"
cat >"$PLAYBOOK" <<EOF
name: gpu-smoke-gate
description: the pre-upgrade gate on this host's $N GPUs (nccl), golden against $CURVE
layers:
  - connectivity
  - stress
  - golden: {reference: "$ROOT/$CURVE"}
gate: warning
EOF
say "pre-upgrade gate on the local backend, nccl, $N ranks"
"$PY" -m sncheck run "$PLAYBOOK" --backend local --cards "$N" --dist-backend nccl \
    --out "$OUT/gate" --format html,junit 2>&1 | tee "$OUT/gate.log"
gate=${PIPESTATUS[0]}
if [ "$gate" -ne 0 ]; then
    failed+=("pre-upgrade gate (exit $gate; see $OUT/gate/report.html)")
fi

# 3. host facts from this host's own tools
say "host facts: nvidia-smi, ibstat, dcgmi on this host"
"$PY" -m sncheck node-check --no-collectives --no-drain --cards "$N" --budget 300s 2>&1 | tee "$OUT/host-facts.log"
facts=${PIPESTATUS[0]}
if [ "$facts" -ne 0 ]; then
    failed+=("host facts (exit $facts)")
fi

if [ "${#failed[@]}" -gt 0 ]; then
    for f in "${failed[@]}"; do say "FAILED: $f"; done
    exit 1
fi
say "all passed: $CURVE recorded, gate passed, host facts clean"
