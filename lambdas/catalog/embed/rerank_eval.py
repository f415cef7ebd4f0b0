#!/usr/bin/env python3
"""Measures what a contextual sentence encoder would add to tool search, without shipping one:
our ranking's top K for every evaluation task (`catalog eval dump K`: fused BM25F + static
embedding scores and each candidate's tool text) is reranked by our score fused with the cosine
of all-MiniLM-L6-v2 sentence vectors (the full transformer, numpy, `distill.py`; mean pooling
over the whole sentence and L2 normalisation, as sentence-transformers does) between the request
and each candidate's text.

The fusion's form, weight and depth are chosen on the tune half only; the held-back half, the
requests without the operation's words and the first evaluation are then scored once with that
choice. Also printed: the transformer alone over the same candidates, and the ceiling (tasks
whose accepted tool is among the K candidates at all, so no reranking can find the rest).

Usage (a built catalog; about 5 CPU minutes for K = 50 on first run, the vectors are cached):
    catalog eval dump 50 > /tmp/dump.jsonl
    python3 lambdas/catalog/embed/rerank_eval.py /tmp/dump.jsonl --cache /tmp/rerank
"""

import argparse
import hashlib
import json
import os
import sys
import time

import numpy as np

import distill
import tokenlearn

# sentence-transformers' max_seq_length for all-MiniLM-L6-v2: longer texts are cut there.
MAX_TOKENS = 256
# Texts per cached file of vectors.
CHUNK = 1000
# What `catalog eval` looks at: a rank below 10 counts as a miss in MRR too.
LOOKED_AT = 10


def text_key(text):
    return hashlib.sha1(text.encode("utf-8")).hexdigest()


def encode_all(texts, cache):
    """L2-normalised sentence vectors of `texts` (a dict key -> vector), from the cache where
    present; new vectors are saved in chunks, so an interrupted run keeps its work."""
    vectors = {}
    if cache:
        os.makedirs(cache, exist_ok=True)
        for name in sorted(os.listdir(cache)):
            if name.endswith(".npz"):
                with np.load(os.path.join(cache, name)) as z:
                    vectors.update(zip(z["keys"].tolist(), z["vectors"]))
    todo = sorted({t for t in texts if text_key(t) not in vectors})
    if todo:
        w, tokenizer, config = distill.load_model()
        cpu = time.process_time()
        for start in range(0, len(todo), CHUNK):
            part = todo[start : start + CHUNK]
            out = tokenlearn.teacher(part, w, tokenizer, config, MAX_TOKENS, quiet=True)
            out /= np.linalg.norm(out, axis=1, keepdims=True)
            keys = [text_key(t) for t in part]
            vectors.update(zip(keys, out))
            if cache:
                np.savez(
                    os.path.join(cache, f"vectors-{time.time_ns()}.npz"),
                    keys=np.array(keys),
                    vectors=out,
                )
            print(
                f"encoded {start + len(part)}/{len(todo)} texts, "
                f"{time.process_time() - cpu:.0f} s CPU",
                file=sys.stderr,
            )
    return vectors


def stored(vectors, tool_texts, dims, int8):
    """The vectors as an artifact would hold them: projected onto the main `dims` directions of
    the tool texts' vectors (PCA, centred) and re-normalised; tool vectors as int8 with a scale
    per vector (requests are encoded at query time and stay float)."""
    tool_keys = sorted({text_key(t) for t in tool_texts})
    out = dict(vectors)
    if dims:
        tools = np.stack([vectors[k] for k in tool_keys])
        mean, components = tools.mean(0), np.linalg.svd(
            tools - tools.mean(0), full_matrices=False
        )[2][:dims]
        out = {}
        for k, v in vectors.items():
            p = (v - mean) @ components.T
            out[k] = p / (np.linalg.norm(p) + 1e-12)
    if int8:
        for k in tool_keys:
            v = out[k]
            q = np.round(v / np.abs(v).max() * 127)
            out[k] = q / (np.linalg.norm(q) + 1e-12)
    return out


class Task:
    def __init__(self, row, k, vectors):
        self.set = row["set"]
        self.no_operation_words = row["no_operation_words"]
        hits = row["hits"][:k]
        accepted = set(row["accepted"])
        self.good = np.array([h["tool"] in accepted for h in hits], dtype=bool)
        self.ours = np.array([h["score"] for h in hits], dtype=np.float64)
        q = vectors[text_key(row["query"])]
        self.cos = np.array(
            [float(vectors[text_key(h["text"])] @ q) for h in hits], dtype=np.float64
        )

    def rank(self, score):
        """Rank of the first accepted tool when the candidates are sorted by `score`
        (ties keep our order), or None beyond what the evaluation looks at."""
        if len(score) == 0:
            return None
        order = np.argsort(-score, kind="stable")
        good = np.flatnonzero(self.good[order])
        if len(good) == 0 or good[0] >= LOOKED_AT:
            return None
        return int(good[0])


def ranks_desc(x):
    """1-based rank of each value in descending order (ties by position)."""
    r = np.empty(len(x))
    r[np.argsort(-x, kind="stable")] = np.arange(1, len(x) + 1)
    return r


def fused(task, form, weight, depth):
    """Scores that sort the candidates: the top `depth` of ours reranked, the rest after them in
    our order."""
    n = len(task.ours)
    d = min(depth, n)
    if n == 0:
        return task.ours
    ours, cos = task.ours[:d], task.cos[:d]
    if form == "linear":
        top = ours + weight * cos
    elif form == "relative":
        # Our score as a fraction of the task's best, so the weight means the same for every
        # request whatever its BM25F scale.
        top = ours / max(ours[0], 1e-9) + weight * cos
    elif form.startswith("rrf"):
        k = float(form[3:])
        top = 1.0 / (k + ranks_desc(ours)) + weight / (k + ranks_desc(cos))
    elif form == "minilm":
        top = cos
    else:
        raise ValueError(form)
    # Below the reranked block: strictly lower than any of it, in our order.
    rest = np.min(top) - 1.0 - np.arange(n - d, dtype=np.float64) / max(n, 1)
    return np.concatenate([top, rest])


def metrics(tasks, score_of):
    n = len(tasks)
    at1 = at5 = rr = 0.0
    for t in tasks:
        r = t.rank(score_of(t))
        if r is not None:
            at1 += r == 0
            at5 += r < 5
            rr += 1.0 / (r + 1)
    return (at1 / n, at5 / n, rr / n) if n else (0.0, 0.0, 0.0)


def fmt(m):
    return " / ".join(f"{x:.3f}" for x in m)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dump", help="`catalog eval dump K` output (JSON lines)")
    ap.add_argument("--k", type=int, default=50, help="candidates per task (at most the dump's)")
    ap.add_argument("--cache", help="directory for the sentence vectors (reused if present)")
    ap.add_argument("--dims", type=int, default=0, help="PCA to this many dimensions (0: 384)")
    ap.add_argument("--int8", action="store_true", help="tool vectors quantised as int8")
    ap.add_argument(
        "--latency", type=int, default=0, help="also time this many one-request encodes"
    )
    args = ap.parse_args()

    with open(args.dump, encoding="utf-8") as f:
        rows = [json.loads(line) for line in f]
    texts = {r["query"] for r in rows} | {h["text"] for r in rows for h in r["hits"][: args.k]}
    print(f"{len(rows)} tasks, {len(texts)} distinct texts (requests and candidates)")
    vectors = encode_all(texts, args.cache)
    if args.dims or args.int8:
        tool_texts = {h["text"] for r in rows for h in r["hits"][: args.k]}
        vectors = stored(vectors, tool_texts, args.dims, args.int8)
        print(f"stored as {args.dims or 384} dimensions{', int8 tool vectors' if args.int8 else ''}")
    tasks = [Task(r, args.k, vectors) for r in rows]
    sets = {
        "tune half": [t for t in tasks if t.set == "tune"],
        "held-back half": [t for t in tasks if t.set == "test"],
        "no operation words (both halves)": [
            t for t in tasks if t.set != "first" and t.no_operation_words
        ],
        "no operation words, held-back": [
            t for t in tasks if t.set == "test" and t.no_operation_words
        ],
        "first evaluation": [t for t in tasks if t.set == "first"],
        "all 303": [t for t in tasks if t.set != "first"],
    }

    # The choice, on the tune half only: best MRR, then recall@1, then recall@5; among equals
    # the smaller weight and the shallower depth (less change to what ships).
    tune = sets["tune half"]
    grid = []
    weights = [0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 5.0, 10.0]
    depths = sorted({d for d in (5, 10, 20, 30, 50) if d <= args.k} | {args.k})
    for form in ("linear", "relative", "rrf10", "rrf60"):
        for w in weights:
            for d in depths:
                m = metrics(tune, lambda t: fused(t, form, w, d))
                grid.append(((m[2], m[0], m[1], -w, -d), form, w, d, m))
    grid.sort(key=lambda g: g[0], reverse=True)
    print("\ntune half, best of each form (recall@1 / recall@5 / MRR):")
    seen = set()
    for _, form, w, d, m in grid:
        if form not in seen:
            seen.add(form)
            print(f"  {form:8} weight {w:<5} depth {d:<3} {fmt(m)}")
    _, form, w, d, _ = grid[0]
    print(f"\nchosen on the tune half: {form}, weight {w}, depth {d} (K = {args.k})")

    print(
        "\n| set | tasks | ours | ours + MiniLM (chosen) | MiniLM alone over the candidates "
        f"| ceiling (accepted in top {args.k}) |"
    )
    print("|---|---|---|---|---|---|")
    for name, ts in sets.items():
        ours = metrics(ts, lambda t: t.ours)
        best = metrics(ts, lambda t: fused(t, form, w, d))
        alone = metrics(ts, lambda t: fused(t, "minilm", 0.0, args.k))
        ceiling = sum(bool(t.good.any()) for t in ts) / len(ts)
        print(f"| {name} | {len(ts)} | {fmt(ours)} | {fmt(best)} | {fmt(alone)} | {ceiling:.3f} |")

    if args.latency:
        w_, tokenizer, config = distill.load_model()
        queries = sorted({r["query"] for r in rows})[: args.latency]
        times = []
        for q in queries:
            cpu = time.process_time()
            v = tokenlearn.teacher([q], w_, tokenizer, config, MAX_TOKENS, quiet=True)
            v /= np.linalg.norm(v)
            times.append((time.process_time() - cpu) * 1000)
        times.sort()
        p = lambda x: times[min(len(times) - 1, int(x * len(times)))]
        print(
            f"\none-request encode, numpy, {len(times)} requests: CPU p50 {p(0.5):.1f} ms, "
            f"p99 {p(0.99):.1f} ms, max {times[-1]:.1f} ms"
        )


if __name__ == "__main__":
    main()
