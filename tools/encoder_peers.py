#!/usr/bin/env python3
"""The BERT encoder layer of apps/encoder_layer, run by its peers on the same weights and inputs.

    build/apps/encoder_layer/encoder_layer_cuda --config base --seq 128 --batch 8 --dump DIR
    python3 tools/encoder_peers.py DIR [--runs 50]

Reads what the app wrote (shape.txt, the tensors as raw fp32, its output and its layer time),
runs the layer in the app's element type (fp16, or bf16 from encoder_layer_cuda_bf16) on the GPU
with PyTorch eager, torch.compile (Inductor: Triton kernels) and JAX jit (XLA), and prints each
one's latency (median of --runs after warm-up), its ratio to the app's, and how far its output
is from the app's. A peer that is not installed is skipped with
a line saying so. Needs a CUDA GPU.
"""

import argparse
import os
import statistics
import sys
import time

import numpy as np


def load(directory):
    shape = {}
    with open(os.path.join(directory, "shape.txt")) as f:
        for line in f:
            key, value = line.split()
            shape[key] = float(value) if key == "layer_ms" else value if key == "element" else int(value)
    shape.setdefault("element", "f16")  # dumps from before the app had a bf16 build
    h, f, t = shape["hidden"], shape["ffn"], shape["seq"] * shape["batch"]
    sizes = {"x": (t, h), "mask": (shape["batch"], shape["seq"]), "wqkv": (3 * h, h), "bqkv": (3 * h,),
             "wo": (h, h), "bo": (h,), "g1": (h,), "b1": (h,), "w1": (f, h), "c1": (f,), "w2": (h, f),
             "c2": (h,), "g2": (h,), "b2": (h,), "out": (t, h)}
    tensors = {name: np.fromfile(os.path.join(directory, name + ".f32"), dtype=np.float32).reshape(size)
               for name, size in sizes.items()}
    return shape, tensors


def timed(fn, sync, runs):
    for _ in range(3):
        fn()
    sync()
    ms = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        sync()
        ms.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(ms)


def torch_layer(shape, w):
    import torch
    import torch.nn.functional as F
    heads, seq, batch = shape["heads"], shape["seq"], shape["batch"]
    d = shape["hidden"] // heads

    def layer(x, mask):
        qkv = F.linear(x, w["wqkv"], w["bqkv"]).view(batch, seq, 3, heads, d).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        scores = q @ k.transpose(-1, -2) / d ** 0.5 + mask[:, None, None, :]
        context = (scores.softmax(-1) @ v).permute(0, 2, 1, 3).reshape(batch * seq, heads * d)
        x1 = F.layer_norm(F.linear(context, w["wo"], w["bo"]) + x, (heads * d,), w["g1"], w["b1"], 1e-12)
        up = F.gelu(F.linear(x1, w["w1"], w["c1"]))
        return F.layer_norm(F.linear(up, w["w2"], w["c2"]) + x1, (heads * d,), w["g2"], w["b2"], 1e-12)

    return layer


def run_torch(shape, tensors, runs, results):
    try:
        import torch
    except ImportError:
        print("PyTorch: not installed, skipped")
        return
    dev = torch.device("cuda")
    dtype = torch.bfloat16 if shape["element"] == "bf16" else torch.float16
    t = {k: torch.from_numpy(v).to(dev, dtype) for k, v in tensors.items() if k not in ("x", "mask", "out")}
    x = torch.from_numpy(tensors["x"]).to(dev, dtype)
    mask = torch.from_numpy(tensors["mask"]).to(dev, dtype)
    layer = torch_layer(shape, t)
    with torch.no_grad():
        out = layer(x, mask)
        results["PyTorch eager"] = (timed(lambda: layer(x, mask), torch.cuda.synchronize, runs),
                                    out.float().cpu().numpy())
        try:
            compiled = torch.compile(layer)
            out = compiled(x, mask)
            results["torch.compile (Inductor)"] = (timed(lambda: compiled(x, mask), torch.cuda.synchronize, runs),
                                                   out.float().cpu().numpy())
        except Exception as e:  # a missing Triton, an unsupported GPU: say so
            print("torch.compile: failed (%s), skipped" % e.__class__.__name__)


def run_jax(shape, tensors, runs, results):
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        print("JAX: not installed, skipped")
        return
    heads, seq, batch = shape["heads"], shape["seq"], shape["batch"]
    d = shape["hidden"] // heads
    dtype = jnp.bfloat16 if shape["element"] == "bf16" else jnp.float16
    w = {k: jnp.asarray(v, dtype=dtype) for k, v in tensors.items() if k not in ("out",)}

    def layernorm(v, g, b):
        v32 = v.astype(jnp.float32)
        mean = v32.mean(-1, keepdims=True)
        var = ((v32 - mean) ** 2).mean(-1, keepdims=True)
        return ((v32 - mean) / jnp.sqrt(var + 1e-12) * g + b).astype(dtype)

    def layer(w):
        x = w["x"]
        qkv = (x @ w["wqkv"].T + w["bqkv"]).reshape(batch, seq, 3, heads, d).transpose(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        scores = q @ k.swapaxes(-1, -2) / dtype(d ** 0.5) + w["mask"][:, None, None, :]
        p = jax.nn.softmax(scores.astype(jnp.float32), -1).astype(dtype)
        context = (p @ v).transpose(0, 2, 1, 3).reshape(batch * seq, heads * d)
        x1 = layernorm(context @ w["wo"].T + w["bo"] + x, w["g1"], w["b1"])
        up = jax.nn.gelu(x1 @ w["w1"].T + w["c1"], approximate=False)
        return layernorm(up @ w["w2"].T + w["c2"] + x1, w["g2"], w["b2"])

    jitted = jax.jit(layer)
    out = jitted(w)
    out.block_until_ready()
    holder = {}

    def step():
        holder["out"] = jitted(w)

    results["JAX jit (XLA)"] = (timed(step, lambda: holder["out"].block_until_ready(), runs),
                                np.asarray(out, dtype=np.float32))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("directory")
    parser.add_argument("--runs", type=int, default=50)
    args = parser.parse_args()
    shape, tensors = load(args.directory)
    print("BERT encoder layer: hidden %d, %d heads, FFN %d, sequence %d, batch %d (%s)"
          % (shape["hidden"], shape["heads"], shape["ffn"], shape["seq"], shape["batch"], shape["element"]))
    results = {}
    run_torch(shape, tensors, args.runs, results)
    run_jax(shape, tensors, args.runs, results)
    app_ms = shape["layer_ms"]
    tokens = shape["seq"] * shape["batch"]
    print("%-26s %10s %12s %14s %22s" % ("", "ms", "tokens/s", "app speedup", "max |out - app's out|"))
    print("%-26s %10.3f %12.0f %14s %22s" % ("Halide-ALCOP (the app)", app_ms, tokens / app_ms * 1e3, "1.00x", "-"))
    for name, (ms, out) in results.items():
        print("%-26s %10.3f %12.0f %13.2fx %22.3g"
              % (name, ms, tokens / ms * 1e3, ms / app_ms, float(np.max(np.abs(out - tensors["out"])))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
