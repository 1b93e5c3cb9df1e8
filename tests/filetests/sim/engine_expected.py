"""The numpy references of the compute-engine `; test run` filetests in this folder.

For each file below, `EXPECTED[name]` computes its output tensors from its `; input` lines
with numpy (float64 of the fp32 inputs, rounded once to the output dtype; ml_dtypes for
bf16), independently of ntile's simulator. Run as

    python3 engine_expected.py          # check: every file's `; expect:` block is numpy's
    python3 engine_expected.py --write  # (re)write the blocks from numpy

`cargo test -p sim --test engine` runs the check, so the expectations stay numpy's.
"""

import math
import re
import sys
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

import ml_dtypes
import numpy as np

HERE = Path(__file__).resolve().parent
F32 = np.float32


def f32(x):
    return np.asarray(x, dtype=np.float64).astype(np.float32)


def act(name, x):
    """An activation of fp32 inputs: float64 math, one rounding to fp32."""
    v = np.asarray(x, dtype=np.float32).astype(np.float64)
    np.seterr(all="ignore")
    erfc = np.vectorize(math.erfc)
    erf = np.vectorize(math.erf)
    sig = lambda t: 1.0 / (1.0 + np.exp(-t))
    # x * gate(x) with the gate going to 0 at -inf: the limit -0 there, not -inf * 0.
    gate = lambda t, g: np.where(t == -np.inf, -0.0, t * g)
    # t * f with f vanishing faster than t grows: 0 at infinite t, not inf * 0.
    vanishing = lambda t, f: np.where(np.isinf(t), 0.0, t * f)
    softplus = lambda t: np.where(t > 0, t + np.log1p(np.exp(-np.abs(t))), np.log1p(np.exp(np.minimum(t, 0))))
    table = {
        "copy": lambda: v,
        "exp": lambda: np.exp(v),
        "log": lambda: np.log(v),
        "tanh": lambda: np.tanh(v),
        "sigmoid": lambda: sig(v),
        "relu": lambda: np.maximum(v, 0.0),
        "gelu": lambda: gate(v, 0.5 * erfc(-v / math.sqrt(2.0))),
        "gelu_apprx_tanh": lambda: gate(v, sig(2.0 * math.sqrt(2.0 / math.pi) * (v + 0.044715 * v**3))),
        "silu": lambda: gate(v, sig(v)),
        "softplus": lambda: softplus(v),
        "square": lambda: v * v,
        "sqrt": lambda: np.sqrt(v),
        "rsqrt": lambda: 1.0 / np.sqrt(v),
        "reciprocal": lambda: 1.0 / v,
        "abs": lambda: np.abs(v),
        "sign": lambda: np.where(v == 0, v, np.sign(v)),
        "erf": lambda: erf(v),
        "sin": lambda: np.sin(v),
        "gelu_dx": lambda: 0.5 * erfc(-v / math.sqrt(2.0)) + vanishing(v, np.exp(-0.5 * v * v) / math.sqrt(2.0 * math.pi)),
        "gelu_apprx_sigmoid": lambda: gate(v, sig(1.702 * v)),
        "gelu_apprx_sigmoid_dx": lambda: sig(1.702 * v) + vanishing(1.702 * v, sig(1.702 * v) * sig(-1.702 * v)),
        "silu_dx": lambda: sig(v) + vanishing(v, sig(v) * sig(-v)),
        "mish": lambda: gate(v, np.tanh(softplus(v))),
        "erf_dx": lambda: 2.0 / math.sqrt(math.pi) * np.exp(-v * v),
        "arctan": lambda: np.arctan(v),
        "cos": lambda: np.cos(v),
        "tan": lambda: np.tan(v),
        "floor": lambda: np.floor(v),
        "ceil": lambda: np.ceil(v),
        "trunc": lambda: np.trunc(v),
    }
    return f32(table[name]())


FUNCS = ("copy exp log tanh sigmoid relu gelu gelu_apprx_tanh silu softplus square sqrt rsqrt reciprocal abs sign "
         "erf sin").split()


def activations(i):
    x = i["x"]
    return {"y": np.stack([act(f, x) for f in FUNCS], axis=1)}


def activation_operands(i):
    x, s, b = i["x"], i["s"], i["b"]
    # The input src * scale + bias is one fused fp32 multiply-add: exact in f64, then rounded.
    y = act("tanh", f32(x.astype(np.float64) * s + b))
    r = np.array([[np.float32(sum(row, F32(0)))] for row in y], dtype=np.float32)  # left to right in fp32
    z = act("gelu", f32(x.astype(np.float64) * 0.5 - 1.0)).astype(ml_dtypes.bfloat16).astype(np.float32)
    e = act("exp", f32(x.astype(np.float64) + b))
    w = np.concatenate([e, np.array([[np.float32(sum(row, F32(0)))] for row in e], dtype=np.float32)], axis=1)
    return {"y": y, "r": r, "z": z, "w": w}


def tensor_scalars(i):
    x, c, n = i["x"], i["c"], i["n"].astype(np.int64)
    a = f32(f32(c - x) * F32(0.5))
    b = np.maximum(f32(x / c), F32(-1))
    q = (x >= 0).astype(np.float32)
    u = f32(f32(x * F32(3)) + F32(0.25))
    sq = f32(x * x) + F32(1)
    v = f32(1.0 / np.sqrt(sq.astype(np.float64)))
    m = ((n & 0xFF0) >> 4).astype(np.int32)
    return {"a": a, "b": b, "q": q, "u": u, "v": v, "m": m}


def reductions(i):
    x = i["x"].reshape(2, 2, 4)
    n = i["n"].astype(np.int64).reshape(2, 2, 4)

    def fold(op, rows):
        out = []
        for row in rows:
            acc = row[0]
            for t in row[1:]:
                acc = np.float32(op(acc, t))
            out.append(acc)
        return np.array(out, dtype=np.float32)

    flat = x.reshape(-1, 4)
    return {
        "sum": fold(lambda a, b: a + b, flat).reshape(2, 2),
        "negmax": -fold(max, flat).reshape(2, 2),
        "min": fold(min, flat).reshape(2, 2),
        "prod": fold(lambda a, b: a * b, flat).reshape(2, 2),
        "sub": fold(lambda a, b: a - b, x.reshape(2, 8)).reshape(2, 1),
        "or": np.bitwise_or.reduce(n, axis=2).astype(np.int32),
    }


def affine(i):
    x = i["x"]
    p = np.arange(4)[:, None]
    j = np.arange(8)[None, :]
    i0, i1 = j // 4, j % 4
    ids = (-3 + 100 * p + 10 * i0 + i1).astype(np.int32)
    idb = (1000 - 7 * p + 3 * j).astype(np.float32).astype(ml_dtypes.bfloat16).astype(np.float32)
    causal = np.where(4 + p - j >= 0, x, F32(-1e30)).astype(np.float32)
    holes = np.where(-5 + 10 * p - 3 * i0 + i1 != 0, x, F32(0)).astype(np.float32)
    return {"ids": ids, "idb": idb, "causal": causal, "holes": holes}


def bn(i):
    x = i["x"]

    def stats(v):
        out = []
        for start in (0, 1):
            h = v[start::2]
            n = np.float32(len(h))
            s = F32(0)
            for t in h:
                s = np.float32(s + t)
            mean = np.float32(s / n)
            m2 = F32(0)
            for t in h:
                d = np.float32(t - mean)
                m2 = np.float32(m2 + np.float32(d * d))
            out += [n, mean, m2]
        return out

    st = np.array([stats(r[:6]) + stats(r[6:]) for r in x], dtype=np.float32)
    mv = []
    for row in st:
        t = row.reshape(4, 3)
        n = F32(0)
        for c in t[:, 0]:
            n = np.float32(n + c)
        s = F32(0)
        for c, m in t[:, :2]:
            s = np.float32(s + np.float32(c * m))
        mean = np.float32(s / n)
        m2 = F32(0)
        for c, m, q in t:
            d = np.float32(m - mean)
            m2 = np.float32(m2 + np.float32(q + np.float32(np.float32(c * d) * d)))
        mv.append([mean, np.float32(m2 / n)])
    return {"stats": st, "meanvar": np.array(mv, dtype=np.float32)}


def binary_ops(i):
    x, y, col = i["x"][0], i["y"][0], i["col"]
    n, k = i["n"][0].astype(np.int64), i["k"][0].astype(np.int64)
    with np.errstate(divide="ignore", invalid="ignore"):
        rows = [
            x - y,
            x / y,
            np.minimum(x, y),
            f32(np.power(y.astype(np.float64), x.astype(np.float64))),
            (x == y).astype(np.float32),
            (x < y).astype(np.float32),
            (x >= y).astype(np.float32),
        ]
    f = np.concatenate([np.array(rows, dtype=np.float32), (np.stack([x, x]) - col).astype(np.float32)])
    wrap = lambda v: ((v + 2**31) % 2**32 - 2**31).astype(np.int32)
    ints = np.array([wrap(n + k), wrap(n * k), wrap(n ^ k), wrap((n << k) & 0xFFFFFFFF)])
    return {"f": f, "i": ints}


def broadcast(i):
    w, m = i["w"], i["m"].reshape(4, 6)
    return {"y": (w[None, :] + m)[::-1].astype(np.float32)}


def transpose16(i):
    return {"y": i["x"].astype(ml_dtypes.bfloat16).T.astype(np.float32)}


EXPECTED = {
    "run_activation.pir": activations,
    "run_activation_scale_bias.pir": activation_operands,
    "run_tensor_scalar.pir": tensor_scalars,
    "run_tensor_reduce.pir": reductions,
    "run_affine_select_iota.pir": affine,
    "run_bn_stats.pir": bn,
    "run_tensor_tensor_ops.pir": binary_ops,
    "run_broadcast_dma.pir": broadcast,
    "run_transpose16.pir": transpose16,
}


def rust_f32(v):
    """A value as Rust prints an f32 (`Display`: shortest round-trip digits, positional)."""
    v = np.float32(v)
    if np.isnan(v):
        return "NaN"
    if np.isinf(v):
        return "inf" if v > 0 else "-inf"
    shortest = np.format_float_positional(v, unique=True, trim="-")
    # As many significant digits as the shortest repr, but a tie rounds away from zero as
    # Rust's formatter does (numpy's rounds it to even): 0.345703125 prints 0.34570313.
    n = max(1, len(shortest.lstrip("-").replace(".", "").lstrip("0").rstrip("0")))
    d = Decimal(float(v))
    if d == 0:
        return shortest
    r = d.quantize(Decimal(1).scaleb(d.adjusted() - n + 1), rounding=ROUND_HALF_UP)
    text = format(r, "f")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return text


def parse(text):
    """The inputs (name -> values, shaped like the HBM tensor) and output names of a file."""
    shapes = {name: (dtype, [int(d) for d in dims.split(",")]) for name, dtype, dims in
              re.findall(r'^tensor t\d+ "(\w+)" hbm (\w+) \[([\d, ]+)\]', text, re.M)}
    names = {m[0]: m[1] for m in re.findall(r'^tensor (t\d+) "(\w+)" hbm', text, re.M)}
    outputs = [names[t.strip()] for t in re.search(r"^outputs (.*)$", text, re.M)[1].split(",")]
    inputs = {}
    for name, spec in re.findall(r"^; input (\w+) = (.*)$", text, re.M):
        dtype, shape = shapes[name]
        count = int(np.prod(shape))
        values = np.arange(count, dtype=np.float32) if spec.strip() == "iota" else np.array(spec.split(), dtype=np.float32)
        # The harness stores each value through fp32 into the tensor's dtype.
        values = values.astype(np.int32) if dtype == "int32" else values
        inputs[name] = values.reshape(shape[0], -1) if len(shape) > 1 else values
    return inputs, outputs, shapes


def expect_block(outputs, shapes, values):
    lines = []
    for name in outputs:
        shape = shapes[name][1]
        v = np.asarray(values[name]).reshape(-1, shape[-1])
        for r, row in enumerate(v):
            # The harness reads every tensor back as fp32 (an int32 past 2^24 prints rounded).
            text = " ".join(rust_f32(np.float32(t)) for t in row)
            lines.append(f"; {name}[{r}] = {text}")
    return "\n".join(lines) + "\n"


def main():
    write = "--write" in sys.argv[1:]
    bad = 0
    for file, compute in EXPECTED.items():
        path = HERE / file
        text = path.read_text()
        head, _, old = text.partition("; expect:\n")
        inputs, outputs, shapes = parse(head)
        block = expect_block(outputs, shapes, compute(inputs))
        if write:
            path.write_text(head + "; expect:\n" + block)
        elif old != block:
            bad += 1
            print(f"{file}: the expectation is not numpy's:\n--- file\n{old}--- numpy\n{block}", file=sys.stderr)
    if bad:
        sys.exit(1)
    print(f"{len(EXPECTED)} files agree with numpy")


if __name__ == "__main__":
    main()
