"""Raw score files written the way pandas and pyarrow users write them (issue 15, item 5).

Run:  python3 tests/data/make_file_variants.py     (writes tests/data/variants/)
Needs pandas and pyarrow (pip install pandas pyarrow); made with pandas 3.1.1, pyarrow 26.0.1.

One small dataset — 3 prompts × 4 responses, correctness, two reward models `a` and `b` —
written once in a plain form and then in every variant that tests/it/file_variants.rs ingests and
compares with the plain form's prepared dataset. Prompt ids hold a comma, Unicode and a newline
so every text format must quote them. Rewards are multiples of 1/8 (exact in float16, float32
and decimal text), so every variant carries exactly the same numbers; `b` is integral (its int64 variant too).

Parquet pair (`--responses pair_*/responses.parquet --rewards a=… --rewards b=…`):
  pair_plain          int64 response ids, bool correctness, float64 rewards (the reference)
  pair_float16        rewards stored as float16 (pyarrow halffloat)
  pair_int8 / pair_uint8   correctness as int8 / uint8 (0/1)
  pair_float32        rewards as float32 (already fine)
  pair_int_rewards    rewards b as int64 (already fine; a stays float)
  pair_dict           prompt ids dictionary-encoded (pyarrow dictionary_encode)
  pair_categorical    prompt and response ids as pandas Categorical (pandas to_parquet)
  pair_string_ids     response ids "sample-0", "sample-1", … (in file order)
  pair_uuid_ids       response ids as UUID strings (not sortable; file order numbers them)
  pair_large_string   prompt ids as large_string
  pair_pandas_index   pandas to_parquet with a labelled index kept as a column (`row`)
  pair_row_groups     one row per row group, zstd compression
  pair_nulls          one extra response whose reward `b` is null (ingest with --drop-unscored)

Flat table (`--table FILE --prompt-col prompt_id --response-col response_id --correct-col correct
--reward-col a=a --reward-col b=b`):
  flat.csv            plain CSV (pandas to_csv)
  flat.tsv            tab-separated (pandas to_csv(sep="\t"))
  flat_semicolon.csv  semicolon-separated (needs --separator ';')
  flat_sci.csv        rewards in scientific notation, True/False correctness (hand-written)
  flat.json           JSON array of records (pandas to_json(orient="records"))
  flat.jsonl          JSON lines (pandas to_json(orient="records", lines=True))
"""
import os
import uuid

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "variants")

PROMPTS = ["q1, part a", "Ünïcødé ✓ prompt", "two\nlines"]
ROWS = []
for p, prompt in enumerate(PROMPTS):
    for r in range(4):
        ROWS.append(
            {
                "prompt_id": prompt,
                "response_id": r,
                "correct": (p + r) % 2 == 0,
                "a": ((3 * p + 5 * r) % 8) / 8 - 0.5,
                "b": float((p * r) % 5),
            }
        )
BASE = pd.DataFrame(ROWS)


def table(cols):
    return pa.table(cols)


def write_pair(name, responses, a, b, **kw):
    d = os.path.join(OUT, name)
    os.makedirs(d, exist_ok=True)
    pq.write_table(responses, os.path.join(d, "responses.parquet"), **kw)
    pq.write_table(a, os.path.join(d, "rewards_a.parquet"), **kw)
    pq.write_table(b, os.path.join(d, "rewards_b.parquet"), **kw)


def pair_tables(pid=None, rid=None, correct=None, a=None, b=None):
    pid = pid if pid is not None else pa.array(BASE.prompt_id, pa.string())
    rid = rid if rid is not None else pa.array(BASE.response_id, pa.int64())
    correct = correct if correct is not None else pa.array(BASE.correct, pa.bool_())
    a = a if a is not None else pa.array(BASE.a, pa.float64())
    b = b if b is not None else pa.array(BASE.b, pa.float64())
    return (
        table({"prompt_id": pid, "response_id": rid, "correct": correct}),
        table({"prompt_id": pid, "response_id": rid, "reward": a}),
        table({"prompt_id": pid, "response_id": rid, "reward": b}),
    )


def main():
    os.makedirs(OUT, exist_ok=True)
    write_pair("pair_plain", *pair_tables())
    import numpy as np

    write_pair(
        "pair_float16",
        *pair_tables(
            a=pa.array(BASE.a.to_numpy(np.float16), pa.float16()),
            b=pa.array(BASE.b.to_numpy(np.float16), pa.float16()),
        ),
    )
    c = BASE.correct.astype(int)
    write_pair("pair_int8", *pair_tables(correct=pa.array(c, pa.int8())))
    write_pair("pair_uint8", *pair_tables(correct=pa.array(c, pa.uint8())))
    write_pair(
        "pair_float32",
        *pair_tables(a=pa.array(BASE.a, pa.float32()), b=pa.array(BASE.b, pa.float32())),
    )
    # Reward b is integral: store it as int64.
    write_pair("pair_int_rewards", *pair_tables(b=pa.array(BASE.b.astype(int), pa.int64())))
    write_pair(
        "pair_dict",
        *pair_tables(pid=pa.array(BASE.prompt_id, pa.string()).dictionary_encode()),
    )
    # pandas Categorical columns → parquet dictionary columns with pandas metadata.
    d = os.path.join(OUT, "pair_categorical")
    os.makedirs(d, exist_ok=True)
    cat = BASE.assign(
        prompt_id=pd.Categorical(BASE.prompt_id),
        response_id=pd.Categorical(BASE.response_id),
    )
    cat[["prompt_id", "response_id", "correct"]].to_parquet(
        os.path.join(d, "responses.parquet"), index=False
    )
    for m in ["a", "b"]:
        cat[["prompt_id", "response_id", m]].rename(columns={m: "reward"}).to_parquet(
            os.path.join(d, f"rewards_{m}.parquet"), index=False
        )
    sid = pa.array([f"sample-{r}" for r in BASE.response_id], pa.string())
    write_pair("pair_string_ids", *pair_tables(rid=sid))
    uids = [str(uuid.UUID(int=(0x9E3779B97F4A7C15 * (i + 1)) % (1 << 128), version=4)) for i in range(len(BASE))]
    write_pair("pair_uuid_ids", *pair_tables(rid=pa.array(uids, pa.string())))
    write_pair(
        "pair_large_string",
        *pair_tables(pid=pa.array(BASE.prompt_id, pa.large_string())),
    )
    # pandas with a named index kept as a column.
    d = os.path.join(OUT, "pair_pandas_index")
    os.makedirs(d, exist_ok=True)
    # (A RangeIndex is stored as metadata only; a labelled index becomes a column.)
    idx = BASE.set_index(pd.Index([f"r{i * i}" for i in range(len(BASE))], name="row"))
    idx[["prompt_id", "response_id", "correct"]].to_parquet(os.path.join(d, "responses.parquet"))
    for m in ["a", "b"]:
        idx[["prompt_id", "response_id", m]].rename(columns={m: "reward"}).to_parquet(
            os.path.join(d, f"rewards_{m}.parquet")
        )
    write_pair("pair_row_groups", *pair_tables(), row_group_size=1, compression="zstd")
    # One extra response (id 9 of the first prompt) whose reward b is null.
    extra = pd.concat(
        [
            BASE,
            pd.DataFrame(
                [{"prompt_id": PROMPTS[0], "response_id": 9, "correct": True, "a": 0.25, "b": None}]
            ),
        ],
        ignore_index=True,
    )
    write_pair(
        "pair_nulls",
        table(
            {
                "prompt_id": pa.array(extra.prompt_id, pa.string()),
                "response_id": pa.array(extra.response_id, pa.int64()),
                "correct": pa.array(extra.correct, pa.bool_()),
            }
        ),
        table(
            {
                "prompt_id": pa.array(extra.prompt_id, pa.string()),
                "response_id": pa.array(extra.response_id, pa.int64()),
                "reward": pa.array(extra.a, pa.float64()),
            }
        ),
        table(
            {
                "prompt_id": pa.array(extra.prompt_id, pa.string()),
                "response_id": pa.array(extra.response_id, pa.int64()),
                "reward": pa.array(extra.b, pa.float64(), from_pandas=True),
            }
        ),
    )

    flat = BASE.assign(correct=BASE.correct.astype(int))
    flat.to_csv(os.path.join(OUT, "flat.csv"), index=False)
    flat.to_csv(os.path.join(OUT, "flat.tsv"), index=False, sep="\t")
    flat.to_csv(os.path.join(OUT, "flat_semicolon.csv"), index=False, sep=";")
    flat.to_json(os.path.join(OUT, "flat.json"), orient="records", force_ascii=False)
    flat.to_json(os.path.join(OUT, "flat.jsonl"), orient="records", lines=True, force_ascii=False)
    # Scientific notation and True/False, written by hand.
    with open(os.path.join(OUT, "flat_sci.csv"), "w", encoding="utf-8") as f:
        f.write("prompt_id,response_id,correct,a,b\n")
        for r in ROWS:
            pid = '"' + r["prompt_id"].replace('"', '""') + '"'
            f.write(f"{pid},{r['response_id']},{r['correct']},{r['a']:.6e},{r['b']:.3E}\n")


if __name__ == "__main__":
    main()
