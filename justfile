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

# 2,000 prompts × 10,000 responses (bench-paper's memory check: peak RSS must not grow with prompts).
paper2k-data:
    cargo run --release -- synth --preset math --prompts 2000 --responses 10000 --out data/paper2k/raw --force
    cargo run --release -- ingest --responses data/paper2k/raw/responses.parquet --rewards data/paper2k/raw/rewards_*.parquet --out data/paper2k/prepared --name synthetic-math-2k --force

# 500 prompts × 10,000 responses (the shard-memory comparison of `bench-shards`).
paper500-data:
    cargo run --release -- synth --preset math --prompts 500 --responses 10000 --out data/paper500/raw --force
    cargo run --release -- ingest --responses data/paper500/raw/responses.parquet --rewards data/paper500/raw/rewards_*.parquet --out data/paper500/prepared --name synthetic-math-500 --force

# The exact estimator at paper scale (experiments/bench-paper.yaml): default (conditional), sampled,
# sampled on 2,000 prompts, then the floor (same index draws, reward lookups and max only).
# Wall time and peak RSS from /usr/bin/time; targets in README "Performance".
bench-paper:
    cargo build --release
    test -f data/paper/prepared/dataset.yaml || just paper-data
    test -f data/paper2k/prepared/dataset.yaml || just paper2k-data
    /usr/bin/time -f "bench-paper conditional: %e s wall, %M KiB peak RSS" target/release/privalign sweep experiments/bench-paper.yaml --out target/bench-paper/conditional --no-progress
    /usr/bin/time -f "bench-paper sampled: %e s wall, %M KiB peak RSS" target/release/privalign sweep experiments/bench-paper.yaml --set estimator=sampled --set lambda_nodes=0 --out target/bench-paper/sampled --no-progress
    /usr/bin/time -f "bench-paper sampled, 2000 prompts: %e s wall, %M KiB peak RSS" target/release/privalign sweep experiments/bench-paper.yaml --set estimator=sampled --set lambda_nodes=0 --set datasets.0.path=../data/paper2k/prepared --out target/bench-paper/sampled-2k --no-progress
    /usr/bin/time -f "bench-paper conditional, 2000 prompts: %e s wall, %M KiB peak RSS" target/release/privalign sweep experiments/bench-paper.yaml --set datasets.0.path=../data/paper2k/prepared --out target/bench-paper/conditional-2k --no-progress
    cargo bench --bench floor

# The README's demo sweep (main command without reports), timed.
bench-demo:
    cargo build --release
    /usr/bin/time -f "demo sweep: %e s wall, %M KiB peak RSS" target/release/privalign sweep experiments/demo.yaml --out target/bench-demo --no-progress

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

# Shards (issue #20): peak RSS of each shard of a 4-way split of the 2,000-prompt data against an
# unsharded run on 500 prompts (sampled bench-paper config); merge of 7 demo shards; bench-paper
# (default estimator) as 8 shards merged, against its one-machine sweep.
bench-shards:
    cargo build --release
    test -f data/paper2k/prepared/dataset.yaml || just paper2k-data
    test -f data/paper500/prepared/dataset.yaml || just paper500-data
    test -f data/paper/prepared/dataset.yaml || just paper-data
    target/release/privalign ingest --responses data/demo/raw/responses.parquet --rewards data/demo/raw/rewards_*.parquet --out data/demo/prepared --name demo --policy synthetic-math --task synthetic --force
    rm -rf target/bench-shards
    /usr/bin/time -f "500 prompts, unsharded: %e s wall, %M KiB peak RSS" target/release/privalign sweep experiments/bench-paper.yaml --set estimator=sampled --set lambda_nodes=0 --set datasets.0.path=../data/paper500/prepared --out target/bench-shards/p500 --no-progress
    for k in 0 1 2 3; do /usr/bin/time -f "2000 prompts, shard $k/4: %e s wall, %M KiB peak RSS" target/release/privalign sweep experiments/bench-paper.yaml --set estimator=sampled --set lambda_nodes=0 --set datasets.0.path=../data/paper2k/prepared --shard $k/4 --out target/bench-shards/p2k-$k --no-progress; done
    for k in 0 1 2 3 4 5 6; do target/release/privalign sweep experiments/demo.yaml --shard $k/7 --out target/bench-shards/demo-$k --no-progress; done
    /usr/bin/time -f "merge of 7 demo shards: %e s wall, %M KiB peak RSS" target/release/privalign merge target/bench-shards/demo-0 target/bench-shards/demo-1 target/bench-shards/demo-2 target/bench-shards/demo-3 target/bench-shards/demo-4 target/bench-shards/demo-5 target/bench-shards/demo-6 --out target/bench-shards/demo-merged
    /usr/bin/time -f "bench-paper one machine: %e s wall, %M KiB peak RSS" target/release/privalign sweep experiments/bench-paper.yaml --out target/bench-shards/paper-one --no-progress
    for k in 0 1 2 3 4 5 6 7; do target/release/privalign sweep experiments/bench-paper.yaml --shard $k/8 --out target/bench-shards/paper-$k --no-progress; done
    /usr/bin/time -f "merge of 8 bench-paper shards: %e s wall, %M KiB peak RSS" target/release/privalign merge target/bench-shards/paper-0 target/bench-shards/paper-1 target/bench-shards/paper-2 target/bench-shards/paper-3 target/bench-shards/paper-4 target/bench-shards/paper-5 target/bench-shards/paper-6 target/bench-shards/paper-7 --out target/bench-shards/paper-merged
    cmp target/bench-shards/paper-one/cells.parquet target/bench-shards/paper-merged/cells.parquet
