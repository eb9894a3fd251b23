"""The issue's "afternoon numpy script": vectorised Best-of-N, sampled estimator, on the
paper-size data (bench-paper's grid: n = 2 … 4096, 50 replicates, gemma clipped to [−11, 22]
and scaled to [0, 1]), scores in memory, one thread. Prints the wall time of the selection
(loading excluded) — the figure README "Performance" compares with privalign's BoN-only
sampled sweep. Usage: python3 benches/numpy_bon.py [data/paper/prepared]"""
import sys
import time

import numpy as np
import pyarrow.parquet as pq

root = sys.argv[1] if len(sys.argv) > 1 else "data/paper/prepared"
t = pq.read_table(f"{root}/scores.parquet", columns=["prompt_id", "gemma"])
r = np.clip(t.column("gemma").to_numpy().astype(np.float64), -11.0, 22.0)
r = (r + 11.0) / 33.0
ids = t.column("prompt_id").to_numpy()
starts = np.flatnonzero(np.r_[True, ids[1:] != ids[:-1]])
ends = np.r_[starts[1:], len(ids)]
rng = np.random.default_rng(0)
ns = [2**k for k in range(1, 13)]
t0 = time.perf_counter()
total = 0.0
for s, e in zip(starts, ends):
    pool = r[s:e]
    for n in ns:
        idx = rng.integers(0, e - s, size=(50, n))
        total += pool[idx].max(axis=1).mean()
secs = time.perf_counter() - t0
print(f"numpy BoN sampled: {len(starts)} prompts, n = 2..4096, 50 replicates: {secs:.2f} s on 1 thread (checksum {total:.6f})")
