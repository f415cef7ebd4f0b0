#!/usr/bin/env python3
"""Fits the static word-piece vectors to whole sentences, the way model2vec's tokenlearn does:
the transformer (all-MiniLM-L6-v2, numpy, `distill.py`) encodes a corpus of sentences; each
sentence's mean-pooled output, projected onto the same 128 principal directions as the per-piece
vectors, is the target; the piece vectors are fitted so that the mean of a sentence's piece
vectors, as the search embeds a text (`catalog-core/src/embed.rs`: the words the catalog splits
out, stop words dropped, greedy longest-match pieces, an unknown word contributes nothing),
predicts it. That is ridge regression over a sparse sentence x piece matrix, pulled toward the
per-piece vectors of `distill.py`, so a piece the corpus never shows keeps its vector.

The corpus is the catalog's own tool texts, as `catalog texts` prints them (one JSON line per
tool: the operation name in words and its description for the transformer, the words the build
embeds for the student). The evaluation's requests are not used.

Usage (after `catalog build` with any embedding; see README.md):
    catalog texts > /tmp/texts.jsonl
    python3 lambdas/catalog/embed/tokenlearn.py /tmp/texts.jsonl lambdas/catalog/embed/static-minilm.bin
"""

import argparse
import json
import os
import random
import sys
import time
import unicodedata

import numpy as np
from scipy import sparse

import distill

# embed.rs: a word of more pieces than this contributes nothing.
MAX_PIECES = 16
# Transformer input length (the model was trained on at most 128 pieces; tool texts are shorter).
MAX_TOKENS = 128
# Pieces per transformer batch (rows of similar length share a batch).
BATCH_TOKENS = 4096
# Sentences per cached piece of the transformer's output.
CHUNK = 2000


def wordpiece(word, vocab, limit=None):
    """Greedy longest-match pieces of one word, or None when a part of it is not in the
    vocabulary (or it needs more than `limit` pieces)."""
    out = []
    start = 0
    while start < len(word):
        end = len(word)
        hit = None
        while start < end:
            sub = word[start:end]
            key = sub if start == 0 else "##" + sub
            if key in vocab:
                hit = vocab[key]
                break
            end -= 1
        if hit is None or (limit is not None and len(out) >= limit):
            return None
        out.append(hit)
        start = end
    return out


def basic_words(text):
    """BERT's basic tokenizer, uncased: lower case, accents stripped, punctuation split off."""
    text = unicodedata.normalize("NFD", text.lower())
    out, cur = [], []
    for c in text:
        if unicodedata.category(c) == "Mn":
            continue
        if c.isspace() or unicodedata.category(c).startswith("C"):
            if cur:
                out.append("".join(cur))
                cur = []
        elif unicodedata.category(c).startswith("P") or (c.isascii() and not c.isalnum()):
            if cur:
                out.append("".join(cur))
                cur = []
            out.append(c)
        else:
            cur.append(c)
    if cur:
        out.append("".join(cur))
    return out


def teacher_ids(text, vocab, max_tokens=MAX_TOKENS):
    ids = [vocab["[CLS]"]]
    unk = vocab["[UNK]"]
    for w in basic_words(text):
        ids.extend(wordpiece(w, vocab) or [unk] if len(w) <= 100 else [unk])
    return ids[: max_tokens - 1] + [vocab["[SEP]"]]


def teacher(texts, w, tokenizer, config, max_tokens=MAX_TOKENS, quiet=False):
    """Mean-pooled transformer output of each text (hidden size), in order."""
    vocab = tokenizer["model"]["vocab"]
    ids = [teacher_ids(t, vocab, max_tokens) for t in texts]
    order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
    out = np.zeros((len(ids), config["hidden_size"]), dtype=np.float32)
    done = 0
    k = 0
    while k < len(order):
        # Rows in order of length, as many as fit BATCH_TOKENS once padded to the last (the
        # longest): a batch sized by a shorter row's length would pad hundreds of short rows
        # to the longest text's length.
        end = k + 1
        while end < len(order) and (end - k + 1) * len(ids[order[end]]) <= BATCH_TOKENS:
            end += 1
        rows = order[k:end]
        length = len(ids[rows[-1]])
        batch = np.zeros((len(rows), length), dtype=np.int64)
        mask = np.zeros((len(rows), length), dtype=np.float32)
        for r, i in enumerate(rows):
            batch[r, : len(ids[i])] = ids[i]
            mask[r, : len(ids[i])] = 1.0
        out[rows] = distill.encode(batch, w, config, mask)
        k += len(rows)
        done += len(rows)
        if not quiet and done // 2000 != (done - len(rows)) // 2000:
            print(f"teacher {done}/{len(ids)}", file=sys.stderr)
    return out


def student_matrix(word_lists, vocab, pieces):
    """Sentence x piece weights: each piece's share of the sentence's pieces (the mean)."""
    rows, cols, vals = [], [], []
    kept = []
    for s, words in enumerate(word_lists):
        ids = []
        for word in words:
            ids.extend(wordpiece(word, vocab, MAX_PIECES) or [])
        if not ids:
            continue
        r = len(kept)
        kept.append(s)
        uniq, counts = np.unique(ids, return_counts=True)
        rows.extend([r] * len(uniq))
        cols.extend(uniq.tolist())
        vals.extend((counts / len(ids)).tolist())
    a = sparse.csr_matrix((vals, (rows, cols)), shape=(len(kept), pieces), dtype=np.float64)
    return a, kept


def fit(a, targets, start, lam, iterations, tol=1e-6):
    """argmin_V |A V - T|^2 + lam |V - V0|^2 over the pieces A uses, by conjugate gradients
    (Jacobi-preconditioned, every column at once); the other rows stay V0."""
    used = np.flatnonzero(np.asarray(a.getnnz(axis=0)) > 0)
    au = a[:, used].tocsr()
    at = au.T.tocsr()
    v0 = start[used].astype(np.float64)
    rhs = at @ targets + lam * v0
    diag = np.asarray(au.multiply(au).sum(axis=0)).ravel() + lam

    def apply(x):
        return at @ (au @ x) + lam * x

    x = v0.copy()
    r = rhs - apply(x)
    z = r / diag[:, None]
    p = z.copy()
    rz = (r * z).sum(0)
    norm0 = np.linalg.norm(rhs, axis=0)
    for it in range(iterations):
        ap = apply(p)
        alpha = rz / np.maximum((p * ap).sum(0), 1e-30)
        x += p * alpha
        r -= ap * alpha
        rel = np.linalg.norm(r, axis=0) / np.maximum(norm0, 1e-30)
        if rel.max() < tol:
            break
        z = r / diag[:, None]
        rz_new = (r * z).sum(0)
        p = z + p * (rz_new / np.maximum(rz, 1e-30))
        rz = rz_new
    print(f"fit: {len(used)} pieces, {it + 1} iterations, residual {rel.max():.2e}", file=sys.stderr)
    out = start.astype(np.float64).copy()
    out[used] = x
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("texts", help="`catalog texts` output (JSON lines)")
    ap.add_argument("out", help="the .bin to write")
    ap.add_argument("--sentences", type=int, default=16000, help="tool texts sampled")
    ap.add_argument("--seed", type=int, default=22)
    ap.add_argument("--lam", type=float, default=0.1, help="pull toward the per-piece vectors")
    ap.add_argument("--iterations", type=int, default=500)
    ap.add_argument("--cache", help="directory for the transformer's outputs (reused if present)")
    args = ap.parse_args()

    w, tokenizer, config = distill.load_model()
    vocab = tokenizer["model"]["vocab"]

    # The corpus: distinct tool texts, a seeded sample.
    seen = {}
    with open(args.texts, encoding="utf-8") as f:
        for line in f:
            d = json.loads(line)
            seen.setdefault(d["text"], d["words"])
    texts = sorted(seen)
    random.Random(args.seed).shuffle(texts)
    texts = texts[: args.sentences]
    words = [seen[t] for t in texts]
    print(f"corpus: {len(texts)} of {len(seen)} distinct tool texts", file=sys.stderr)

    if args.cache:
        os.makedirs(args.cache, exist_ok=True)

    def cached(name, compute):
        if args.cache:
            path = f"{args.cache}/{name}.npy"
            try:
                return np.load(path)
            except FileNotFoundError:
                value = compute()
                np.save(path, value)
                return value
        return compute()

    cpu = time.process_time()
    piece_out = cached("pieces", lambda: distill.piece_vectors(w, tokenizer, config)[1])
    tokens = sorted(vocab, key=vocab.get)
    print(f"per-piece pass: {time.process_time() - cpu:.0f} s CPU", file=sys.stderr)
    mean, components = distill.pca(piece_out)
    start = (piece_out - mean) @ components.T

    cpu = time.process_time()
    # In chunks, so a larger sample reuses a smaller one's outputs.
    sent_out = np.concatenate(
        [
            cached(
                f"teacher-{args.seed}-{k}",
                lambda k=k: teacher(texts[k : k + CHUNK], w, tokenizer, config),
            )
            for k in range(0, len(texts), CHUNK)
        ]
    )
    print(f"teacher pass: {len(texts)} sentences, {time.process_time() - cpu:.0f} s CPU", file=sys.stderr)
    # Centred on the sentences' own mean: the outputs share a direction (cosine 0.65 with their
    # mean) that says nothing about what a text means; left in, it pulls every fitted vector
    # toward it and squeezes the cosines the search compares.
    targets = (sent_out - sent_out.mean(0, keepdims=True)) @ components.T

    a, kept = student_matrix(words, vocab, len(tokens))
    targets = targets[kept].astype(np.float64)
    before = a @ start
    cpu = time.process_time()
    vectors = fit(a, targets, start, args.lam, args.iterations)
    after = a @ vectors

    def agreement(pred):
        num = (pred * targets).sum(1)
        den = np.linalg.norm(pred, axis=1) * np.linalg.norm(targets, axis=1) + 1e-12
        return float(np.mean(num / den))

    print(
        f"fit: {time.process_time() - cpu:.0f} s CPU; mean cosine with the teacher over "
        f"{len(kept)} sentences: {agreement(before):.3f} per-piece, {agreement(after):.3f} fitted",
        file=sys.stderr,
    )
    distill.write(args.out, tokens, vectors)


if __name__ == "__main__":
    main()
