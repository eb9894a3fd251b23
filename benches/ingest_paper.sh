#!/usr/bin/env bash
# Benchmark: synth and ingest at the paper's size (1000 prompts × 10,000
# responses × 4 reward models = 10M rows), reporting wall time and peak RSS.
# Usage: bash benches/ingest_paper.sh [WORKDIR]   (needs `cargo build --release` first)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${PRIVALIGN:-target/release/privalign}
work=${1:-$(mktemp -d)}
measure() {
  # GNU time is not always installed; read peak RSS from /proc via a wrapper.
  local label=$1; shift
  local start end
  start=$(date +%s.%N)
  "$@" &
  local pid=$! peak=0 rss
  while kill -0 "$pid" 2>/dev/null; do
    rss=$(awk '/VmHWM/ {print $2}' "/proc/$pid/status" 2>/dev/null || echo 0)
    [ -n "$rss" ] && [ "$rss" -gt "$peak" ] && peak=$rss
    sleep 0.05
  done
  wait "$pid"
  end=$(date +%s.%N)
  printf '%-28s %7.2f s   peak RSS %6.0f MiB\n' "$label" "$(echo "$end - $start" | bc)" "$(echo "$peak / 1024" | bc)"
}
measure "synth --size paper" "$bin" synth --preset math --size paper --seed 0 --out "$work/raw" --force
du -sh "$work/raw"
measure "ingest (parquet pair, 10M)" "$bin" ingest --responses "$work/raw/responses.parquet" \
  --rewards "$work"/raw/rewards_*.parquet --out "$work/prepared" --force
du -sh "$work/prepared"
