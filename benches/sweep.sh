#!/usr/bin/env bash
# Sweep benchmarks (release build): the demo experiment end to end, and the scale sweep of
# issue #5 — 4 reward models × (5 σ PrivBoN + 7 β ITP + 5 σ × 7 β PrivITP + BoN) × 12 n on the
# paper-size synthetic data (1000 prompts × 10,000 responses), 50 replicates, sampled
# estimator — with wall time and peak RSS. Needs `just paper-data` for the second part.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=target/release/privalign
cargo build --release -q
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "== demo (experiments/demo.yaml), 2 threads"
/usr/bin/time -f "wall %e s, peak RSS %M KB" $bin sweep experiments/demo.yaml --out "$work/demo" --no-progress 2>&1 | grep -E 'wrote|wall'
echo "== demo, 1 thread"
/usr/bin/time -f "wall %e s, peak RSS %M KB" $bin sweep experiments/demo.yaml --out "$work/demo1" --threads 1 --no-progress 2>&1 | grep -E 'wrote|wall'
if [ -d data/paper/prepared ]; then
  cat > "$work/scale.yaml" <<YAML
name: scale
datasets: [{path: $PWD/data/paper/prepared}]
reward_models:
  oasst: {transform: {kind: clip, lo: -6.0, hi: 7.0}}
  gemma: {transform: {kind: clip, lo: -11.0, hi: 22.0}}
  llama: {transform: {kind: clip, lo: -3.5, hi: 6.0}}
  armo: {transform: {kind: clip, lo: -0.07, hi: 0.41}}
n: {log2: [1, 12]}
replicates: 50
estimator: sampled
lambda_nodes: 0
algorithms:
  bon: {}
  privbon: {sigma: [0.05, 0.1, 0.25, 0.5, 1.0]}
  itp: {beta: [0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5]}
  privitp: {sigma: [0.05, 0.1, 0.25, 0.5, 1.0], beta: [0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5]}
YAML
  echo "== scale sweep (paper-size data)"
  /usr/bin/time -f "wall %e s, peak RSS %M KB" $bin sweep "$work/scale.yaml" --out "$work/scale" --no-progress 2>&1 | grep -E 'wrote|wall'
else
  echo "(skipping the scale sweep: run \`just paper-data\` first)"
fi
