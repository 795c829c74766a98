#!/usr/bin/env bash
# The flake check of issue 23: runs the whole test suite RUNS times (default 5)
# with BUSY CPU-bound loops (default 2) beside it, as a loaded CI machine would
# be, and prints each run's result and time, then "N/RUNS green". The loops are
# started per run and killed when it ends (also on Ctrl-C), so nothing outlives
# the script. Usage: bash scripts/busy-cpu-suite.sh [RUNS] [BUSY]
set -uo pipefail
cd "$(dirname "$0")/../orchestrator"
runs=${1:-5}
busy=${2:-2}
pids=()
stop_busy() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  wait "${pids[@]}" 2>/dev/null
  pids=()
}
trap 'stop_busy; exit 130' INT TERM
green=0
for run in $(seq 1 "$runs"); do
  for _ in $(seq 1 "$busy"); do
    node -e 'for (;;) {}' &
    pids+=("$!")
  done
  start=$(date +%s)
  log="/tmp/endercloud-busy-run-$run.log"
  if npm test >"$log" 2>&1; then
    result=green
    green=$((green + 1))
  else
    result="red (log: $log)"
  fi
  stop_busy
  echo "run $run/$runs with $busy busy loops: $result in $(($(date +%s) - start)) s; $(grep -E '^ +Tests ' "$log" | tail -1 | sed 's/^ *//')"
done
echo "$green/$runs green with $busy busy CPU loops"
[ "$green" = "$runs" ]
