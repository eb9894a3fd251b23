# Conveniences only: every recipe is a plain command you can run without `just`.

# The README's main job: prepare the demo dataset from the committed raw files.
demo:
    cargo run --release -- ingest --responses data/demo/raw/responses.parquet --rewards data/demo/raw/rewards_*.parquet --out data/demo/prepared --name demo --policy synthetic-math --task synthetic --force

# The test suite, exactly as CI runs it.
test:
    cargo test --locked

# fmt and clippy, as required before every commit.
lint:
    cargo fmt --check
    cargo clippy --all-targets -- -D warnings

# Regenerate the committed demo raw files (a test checks they match).
data:
    cargo run --release -- synth --preset math --size demo --seed 0 --out data/demo/raw --force

# Benchmarks: synth and ingest at the paper's size (1000 prompts × 10,000 responses × 4 RMs).
bench:
    cargo build --release
    bash benches/ingest_paper.sh
    cargo bench --bench engine
