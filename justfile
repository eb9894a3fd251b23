# Conveniences only: every recipe is a plain command you can run without `just`.

# The README's main job: prepare the committed demo data, then sweep and render every report.
demo:
    cargo run --release -- ingest --responses data/demo/raw/responses.parquet --rewards data/demo/raw/rewards_*.parquet --out data/demo/prepared --name demo --policy synthetic-math --task synthetic --force
    cargo run --release -- reproduce experiments/demo.yaml

# The test suite, exactly as CI runs it (CI then runs `check`, below).
test:
    cargo test --locked

# The regression check CI runs: re-sweep the demo and compare with results/demo/reference.yaml.
check:
    cargo run --release -- check results/demo --recompute --claims experiments/paper-claims.yaml

# fmt and clippy, as required before every commit.
lint:
    cargo fmt --check
    cargo clippy --all-targets -- -D warnings

# Regenerate the committed demo raw files (a test checks they match).
data:
    cargo run --release -- synth --preset math --size demo --seed 0 --out data/demo/raw --force

# Paper-size synthetic data for the configs in experiments/ (see experiments/README.md).
paper-data:
    cargo run --release -- synth --preset math --size paper --out data/paper/raw --force
    cargo run --release -- ingest --responses data/paper/raw/responses.parquet --rewards data/paper/raw/rewards_*.parquet --out data/paper/prepared --name synthetic-math --force

# Benchmarks: synth + ingest at paper size, the engine, and the sweeps (demo; paper-size scale).
bench:
    cargo build --release
    bash benches/ingest_paper.sh
    cargo bench --bench engine
    bash benches/sweep.sh

# Privacy audit benchmark: one setting per mechanism at 10^6 runs per input (paper's n = 16,
# Δ_r = 0.39, σ = 0.5), wall time and peak RSS of each, then the whole budget-table audit.
bench-audit:
    cargo build --release
    for m in privbon privbon-gauss privitp fsrc; do /usr/bin/time -f "$m: %e s wall, %M KB peak RSS" target/release/privalign audit --mechanism $m --sigma 0.5 --n 16 --delta-r 0.39 --trials 1000000 > /dev/null; done
    /usr/bin/time -f "experiments/audit.yaml: %e s wall, %M KB peak RSS" target/release/privalign audit --config experiments/audit.yaml
