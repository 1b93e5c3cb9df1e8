"""A numpy interpreter of NKI traces (format ``ntile-nki-trace`` version 1), for tests only.

It executes a trace's records one by one on numpy images of every tensor, independently of the
Rust kernel builder and simulator, so the tracer's traces (and ntile's kernels) can be checked
against numpy references, and later cross-check the native runner. Semantics follow the format:
on-chip tiles are ``P * F`` elements per block, fresh SBUF/PSUM reads as NaN, engines compute in
fp32 and round once into the destination's dtype (ml_dtypes' round-to-nearest-even), a DMA
casts through fp32, matmuls accumulate in fp32 PSUM with ``accumulate`` as the format infers it.

``runner(trace_json, inputs, options)`` has the signature of ``ntile._native.nki_run`` and
returns a handle with ``outputs()``; its ``report()`` is a stand-in (the instruction count as
``modeled_time_us``) that only lets the Python entry points be exercised.
"""

from __future__ import annotations

import json
import math
from typing import Any, Dict, List, Optional

import ml_dtypes
import numpy as np

NUMPY = {"fp32": np.float32, "bf16": ml_dtypes.bfloat16, "fp16": np.float16, "fp8e4m3": ml_dtypes.float8_e4m3,
         "fp8e4m3fn": ml_dtypes.float8_e4m3fn, "fp8e5m2": ml_dtypes.float8_e5m2, "uint8": np.uint8,
         "int16": np.int16, "int32": np.int32, "int8": np.int8, "uint16": np.uint16, "uint32": np.uint32,
         "tf32": np.float32}
FLOATS = {"fp32", "bf16", "fp16", "fp8e4m3", "fp8e4m3fn", "fp8e5m2", "tf32"}

_erf = np.vectorize(math.erf, otypes=[np.float64])


def _quiet(f, a, b):
    """``f(a, b)`` without numpy's warning for the NaN of a remainder by zero."""
    with np.errstate(invalid="ignore"):
        return f(a, b)


def _sig(x):
    return 1.0 / (1.0 + np.exp(-x))


ACT = {
    "copy": lambda x: x,
    "exp": np.exp,
    "log": np.log,
    "tanh": np.tanh,
    "sigmoid": lambda x: 1.0 / (1.0 + np.exp(-x)),
    "relu": lambda x: np.maximum(x, 0.0),
    "gelu": lambda x: 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0))),
    "gelu_apprx_tanh": lambda x: 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3))),
    "silu": lambda x: x / (1.0 + np.exp(-x)),
    "softplus": lambda x: np.log1p(np.exp(x)),
    "square": np.square,
    "sqrt": np.sqrt,
    "rsqrt": lambda x: 1.0 / np.sqrt(x),
    "reciprocal": lambda x: 1.0 / x,
    "abs": np.abs,
    "sign": np.sign,
    "erf": _erf,
    "sin": np.sin,
    "gelu_dx": lambda x: 0.5 * (1.0 + _erf(x / math.sqrt(2.0))) + x * np.exp(-x * x / 2.0) / math.sqrt(2.0 * math.pi),
    "gelu_apprx_sigmoid": lambda x: x / (1.0 + np.exp(-1.702 * x)),
    "gelu_apprx_sigmoid_dx": lambda x: _sig(1.702 * x) * (1.0 + 1.702 * x * (1.0 - _sig(1.702 * x))),
    "silu_dx": lambda x: _sig(x) * (1.0 + x * (1.0 - _sig(x))),
    "mish": lambda x: x * np.tanh(np.log1p(np.exp(x))),
    "erf_dx": lambda x: 2.0 / math.sqrt(math.pi) * np.exp(-x * x),
    "arctan": np.arctan,
    "cos": np.cos,
    "tan": np.tan,
    "floor": np.floor,
    "ceil": np.ceil,
    "trunc": np.trunc,
}


def _bits(f):
    def g(a, b):
        return f(np.asarray(a).astype(np.int64), np.asarray(b).astype(np.int64)).astype(np.float64)
    return g


ALU = {
    "add": np.add, "subtract": np.subtract, "multiply": np.multiply, "divide": np.divide,
    "maximum": np.maximum, "minimum": np.minimum, "power": np.power,
    "equal": lambda a, b: (a == b).astype(np.float64), "not_equal": lambda a, b: (a != b).astype(np.float64),
    "greater": lambda a, b: (a > b).astype(np.float64), "greater_equal": lambda a, b: (a >= b).astype(np.float64),
    "less": lambda a, b: (a < b).astype(np.float64), "less_equal": lambda a, b: (a <= b).astype(np.float64),
    "bitwise_and": _bits(np.bitwise_and), "bitwise_or": _bits(np.bitwise_or), "bitwise_xor": _bits(np.bitwise_xor),
    "logical_and": lambda a, b: np.logical_and(a, b).astype(np.float64),
    "logical_or": lambda a, b: np.logical_or(a, b).astype(np.float64),
    "logical_xor": lambda a, b: np.logical_xor(a, b).astype(np.float64),
    "abs_max": lambda a, b: np.maximum(np.abs(a), np.abs(b)),
    "abs_min": lambda a, b: np.minimum(np.abs(a), np.abs(b)),
    "mod": lambda a, b: _quiet(np.mod, np.float32(a), np.float32(b)).astype(np.float64),
    "fmod": lambda a, b: _quiet(np.fmod, a, b),
}
REDUCE = {"add": np.sum, "maximum": np.max, "minimum": np.min, "multiply": np.prod}


def _num(x: Any) -> float:
    if isinstance(x, str):
        return {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}[x]
    return float(x)


class Reference:
    """The state of one run: a flat image per tensor (on chip: blocks of ``P * F`` elements)."""

    def __init__(self, doc: Dict[str, Any], inputs: Dict[str, np.ndarray]) -> None:
        self.doc = doc
        self.tensors = doc["tensors"]
        self.images: List[np.ndarray] = []
        self.tile: List[int] = []
        self.open: Dict[int, np.ndarray] = {}
        for i, t in enumerate(self.tensors):
            shape = t["shape"]
            dt = NUMPY[t["dtype"]]
            if t["buffer"] in ("sbuf", "psum"):
                par = t["par"]
                nblocks = int(np.prod(shape[:par])) if par else 1
                T = int(np.prod(shape[par:]))
                self.tile.append(T)
                size = nblocks * T
            else:
                self.tile.append(0)
                size = int(np.prod(shape))
            fill = np.nan if t["dtype"] in FLOATS else 0
            img = np.full(size, fill, dtype=np.float32).astype(dt)
            if t["buffer"] == "input":
                if t["name"] in inputs:
                    src = np.asarray(inputs[t["name"]])
                    img = src.reshape(-1).astype(np.float32).astype(dt) if src.dtype != dt else src.reshape(-1).copy()
            self.images.append(img)
            if t["buffer"] == "psum":
                self.open[i] = np.zeros(size, dtype=bool)
        for c in doc.get("constants", []):
            t = self.tensors[c["t"]]
            self.images[c["t"]] = np.asarray(c["values"], dtype=np.float32).astype(NUMPY[t["dtype"]])

    # --- views ---------------------------------------------------------------------------

    def index(self, v: Dict[str, Any]) -> np.ndarray:
        t = v["t"]
        base = v["offset"]
        if "block" in v:
            par = self.tensors[t]["par"]
            bshape = self.tensors[t]["shape"][:par]
            b = 0
            for n, i in zip(bshape, v["block"]):
                b = b * n + i
            base += b * self.tile[t]
        idx = np.full([c for _, c in v["ap"]], base, dtype=np.int64)
        for k, (s, c) in enumerate(v["ap"]):
            shape = [1] * len(v["ap"])
            shape[k] = c
            idx = idx + (np.arange(c, dtype=np.int64) * s).reshape(shape)
        size = self.images[t].size
        if idx.size and (idx.min() < 0 or idx.max() >= size):
            raise IndexError(f"view of tensor {t} ({self.tensors[t]['name']}) out of range")
        return idx

    def raw(self, v: Dict[str, Any]) -> np.ndarray:
        idx = self.index(v)
        if v["t"] in self.open:
            self.open[v["t"]][idx.reshape(-1)] = False
        return self.images[v["t"]][idx]

    def read(self, v: Dict[str, Any]) -> np.ndarray:
        return self.raw(v).astype(np.float64)

    def write(self, v: Dict[str, Any], values: np.ndarray, exact: bool = False) -> None:
        idx = self.index(v)
        t = v["t"]
        dt = NUMPY[self.tensors[t]["dtype"]]
        vals = np.asarray(values)
        if vals.shape != idx.shape:
            vals = vals.reshape(idx.shape)
        if exact and vals.dtype == dt:
            out = vals
        elif self.tensors[t]["dtype"] in FLOATS:
            out = vals.astype(np.float32).astype(dt)
        else:
            # Round half to even, clamp to the type's range (NaN becomes 0), as the engines convert.
            info = np.iinfo(dt)
            v = np.nan_to_num(np.rint(vals.astype(np.float64)), nan=0.0)
            out = np.clip(v, info.min, info.max).astype(dt)
        self.images[t][idx] = out
        if t in self.open:
            self.open[t][idx.reshape(-1)] = False

    def scalar(self, s: Any, like: np.ndarray) -> Any:
        if isinstance(s, dict):
            x = self.read(s)
            return x.reshape(x.shape[0], *([1] * (like.ndim - 1)))
        return _num(s)

    # --- records -------------------------------------------------------------------------

    def run(self) -> None:
        for rec in self.doc["ops"]:
            getattr(self, "op_" + rec["op"])(rec)

    def op_loop_begin(self, rec: Any) -> None:
        pass

    op_iteration = op_loop_end = op_loop_begin

    def op_dma_copy(self, rec: Any) -> None:
        src = self.raw(rec["src"])
        same = self.tensors[rec["src"]["t"]]["dtype"] == self.tensors[rec["dst"]["t"]]["dtype"]
        self.write(rec["dst"], src if same else src.astype(np.float32), exact=same)

    def _rows(self, rec: Any, n_table: int) -> np.ndarray:
        """The index entries; with ``skip`` the ones outside the table are -1 (left alone)."""
        rows = self.raw(rec["indices"]).reshape(-1).astype(np.int64)
        bad = (rows < 0) | (rows >= n_table)
        if bad.any() and not rec.get("skip", False):
            raise ValueError(f"index out of range of {n_table} rows: {rows.tolist()}")
        return np.where(bad, -1, rows)

    def op_dma_gather(self, rec: Any) -> None:
        same = self.tensors[rec["table"]["t"]]["dtype"] == self.tensors[rec["dst"]["t"]]["dtype"]
        # The same dtype moves bits; another converts through fp32 as the DMA does.
        table = self.raw(rec["table"]) if same else self.read(rec["table"]).astype(np.float32)
        rows = self._rows(rec, table.shape[0])
        old = self.raw(rec["dst"]) if same else self.read(rec["dst"])
        dst = old.copy().reshape((len(rows),) + table.shape[1:])
        for k, r in enumerate(rows):
            if r >= 0:
                dst[k] = table[r]
        self.write(rec["dst"], dst, exact=same)

    def op_dma_scatter(self, rec: Any) -> None:
        table = self.raw(rec["table"]).copy()
        rows = self._rows(rec, table.shape[0])
        src = self.raw(rec["src"]).reshape((len(rows),) + table.shape[1:])
        same = self.tensors[rec["table"]["t"]]["dtype"] == self.tensors[rec["src"]["t"]]["dtype"]
        for k, r in enumerate(rows):  # in index order: a repeated row keeps the later source
            if r >= 0:
                table[r] = src[k] if same else src[k].astype(np.float32).astype(table.dtype)
        self.write(rec["table"], table, exact=True)

    def op_dma_scatter_add(self, rec: Any) -> None:
        table = self.read(rec["table"]).astype(np.float32)
        rows = self._rows(rec, table.shape[0])
        src = self.read(rec["src"]).astype(np.float32).reshape((len(rows),) + table.shape[1:])
        # One index after the other: a repeated row adds each of its sources in turn.
        for k, r in enumerate(rows):
            if r >= 0:
                table[r] = (table[r] + src[k]).astype(NUMPY[self.tensors[rec["table"]["t"]]["dtype"]])
        self.write(rec["table"], table)

    def op_tensor_copy(self, rec: Any) -> None:
        self.op_dma_copy(rec)

    def op_memset(self, rec: Any) -> None:
        idx = self.index(rec["dst"])
        self.write(rec["dst"], np.full(idx.shape, _num(rec["value"])))

    def op_matmul(self, rec: Any) -> None:
        st, mv = self.read(rec["stationary"]), self.read(rec["moving"])
        if rec["perf_mode"].startswith("double_row"):
            # [P, 2, M] x [P, 2, N]: the contraction runs over the partitions and the pair axis.
            st = st.reshape(st.shape[0] * 2, -1).astype(np.float32)
            mv = mv.reshape(mv.shape[0] * 2, -1).astype(np.float32)
        else:
            st = st.reshape(st.shape[0], -1).astype(np.float32)
            mv = mv.reshape(mv.shape[0], -1).astype(np.float32)
        prod = (st.T.astype(np.float64) @ mv.astype(np.float64)).astype(np.float32)
        d = rec["dst"]
        idx = self.index(d).reshape(-1)
        t = d["t"]
        img = self.images[t]
        acc = rec["accumulate"]
        if acc is None:
            acc = bool(self.open[t][idx].all())
        if acc:
            img[idx] = (img[idx].astype(np.float32) + prod.reshape(-1)).astype(img.dtype)
        else:
            img[idx] = prod.reshape(-1).astype(img.dtype)
        self.open[t][idx] = True

    def op_transpose(self, rec: Any) -> None:
        x = self.raw(rec["src"])
        x = x.reshape(x.shape[0], -1)
        self.write(rec["dst"], x.T.astype(np.float32))

    def op_tensor_tensor(self, rec: Any) -> None:
        a, b = self.read(rec["in0"]), self.read(rec["in1"])
        shape = self.index(rec["dst"]).shape
        self.write(rec["dst"], ALU[rec["alu"]](a.reshape(shape), b.reshape(shape)))

    def op_tensor_scalar(self, rec: Any) -> None:
        x = self.read(rec["src"])
        shape = self.index(rec["dst"]).shape
        x = x.reshape(shape)

        def apply(op: str, a: Any, s: Any, rev: bool) -> Any:
            return ALU[op](s, a) if rev else ALU[op](a, s)

        y = apply(rec["op0"], x, self.scalar(rec["s0"], x), rec["reverse0"])
        if rec["op1"] is not None:
            y = apply(rec["op1"], y, self.scalar(rec["s1"], x), rec["reverse1"])
        self.write(rec["dst"], y)

    def op_tensor_tensor_scan(self, rec: Any) -> None:
        shape = self.index(rec["dst"]).shape
        a = self.read(rec["in0"]).reshape(shape[0], -1)
        b = self.read(rec["in1"]).reshape(shape[0], -1)
        a, b = a.astype(np.float32), b.astype(np.float32)
        x = np.broadcast_to(np.asarray(self.scalar(rec["initial"], a), dtype=np.float32), (shape[0], 1)).reshape(-1)
        dt = NUMPY[self.tensors[rec["dst"]["t"]]["dtype"]]
        out = np.empty(a.shape)
        for i in range(a.shape[1]):
            # Each operator in fp32, each step rounded to the destination's dtype it is read
            # back from.
            y = np.asarray(ALU[rec["op0"]](a[:, i], x), dtype=np.float32)
            x = np.asarray(ALU[rec["op1"]](y, b[:, i]), dtype=np.float32).astype(dt).astype(np.float32)
            out[:, i] = x
        self.write(rec["dst"], out.reshape(shape))

    def op_tensor_scalar_cumulative(self, rec: Any) -> None:
        shape = self.index(rec["dst"]).shape
        x = self.read(rec["src"]).reshape(shape[0], -1).astype(np.float32)
        c = np.broadcast_to(np.asarray(self.scalar(rec["s0"], x), dtype=np.float32), (shape[0], 1)).reshape(-1)
        reg = np.broadcast_to(np.asarray(self.scalar(rec["initial"], x), dtype=np.float32), (shape[0], 1))
        reg = reg.reshape(-1).copy()
        out = np.empty(x.shape)
        for i in range(x.shape[1]):
            # Each operator in fp32; the register keeps fp32, only the stored copy is rounded.
            a = ALU[rec["op0"]](c, x[:, i]) if rec["reverse0"] else ALU[rec["op0"]](x[:, i], c)
            reg = np.asarray(ALU[rec["op1"]](np.asarray(a, dtype=np.float32), reg), dtype=np.float32)
            out[:, i] = reg
        self.write(rec["dst"], out.reshape(shape))

    def op_tensor_partition_reduce(self, rec: Any) -> None:
        src = self.raw(rec["src"])
        x = src.reshape(src.shape[0], -1)
        op = rec["alu"]
        if op.startswith("bitwise"):
            acc = x[0].copy()
            for row in x[1:]:
                acc = ALU[op](acc, row).astype(acc.dtype)
            self.write(rec["dst"], acc, exact=True)
            return
        acc = x[0].astype(np.float32)
        for row in x[1:]:  # partition 0 first, each step in fp32
            acc = np.asarray(ALU[op](acc, row.astype(np.float32)), dtype=np.float32)
        self.write(rec["dst"], acc)

    def op_top8(self, rec: Any) -> None:
        src = self.read(rec["src"]).astype(np.float32)
        x = src.reshape(src.shape[0], -1)
        mode = rec["mode"]
        if mode == "max8":
            # NaN first, then the values from the largest (numpy's sort puts NaN last).
            key = np.where(np.isnan(x), np.inf, x)
            order = np.argsort(-key, axis=1, kind="stable")[:, :8]
            self.write(rec["dst"], np.take_along_axis(x, order, axis=1))
            return
        vals = self.read(rec["vals"]).astype(np.float32).reshape(x.shape[0], 8)
        out, pos = x.copy(), np.full((x.shape[0], 8), 0xFFFFFFFF, dtype=np.float64)
        for p in range(x.shape[0]):
            free = np.ones(x.shape[1], dtype=bool)
            for i in (range(7, -1, -1) if mode == "match_replace8" else range(8)):
                hits = np.flatnonzero(free & (x[p] == vals[p, i]))
                if hits.size:
                    free[hits[0]] = False
                    pos[p, i] = hits[0]
                    out[p, hits[0]] = _num(rec.get("value", 0.0))
        sentinel = {"uint16": 0xFFFF, "uint32": 0xFFFFFFFF}
        index_view = rec["dst"] if mode == "find_index8" else rec.get("idx")
        if index_view is not None:
            width = sentinel[self.tensors[index_view["t"]]["dtype"]]
            self.write(index_view, np.minimum(pos, width))
        if mode == "match_replace8":
            self.write(rec["dst"], out.reshape(src.shape))

    def op_stream_shuffle(self, rec: Any) -> None:
        src = self.raw(rec["src"])
        src = src.reshape(src.shape[0], -1)
        d = rec["dst"]
        out = self.raw(d).copy()
        rows = out.reshape(out.shape[0], -1)
        for j in range(rows.shape[0]):
            m = rec["shuffle_mask"][j % 32]
            if m != 255:
                rows[j] = src[(j // 32) * 32 + m]
        self.write(d, rows.reshape(out.shape), exact=True)

    def op_tensor_copy_predicated(self, rec: Any) -> None:
        d = rec["dst"]
        shape = self.index(d).shape
        keep = self.raw(rec["pred"]).reshape(shape) != 0
        if rec["reverse"]:
            keep = ~keep
        old = self.raw(d).reshape(shape)
        if "src" in rec:
            new = self.raw(rec["src"]).reshape(shape)
        else:
            fill = np.full(shape, _num(rec["value"]))
            floats = self.tensors[d["t"]]["dtype"] in FLOATS
            new = (fill.astype(np.float32) if floats else np.rint(fill)).astype(old.dtype)
        self.write(d, np.where(keep, new, old), exact=True)

    def op_activation(self, rec: Any) -> None:
        x = self.read(rec["src"])
        shape = self.index(rec["dst"]).shape
        x = x.reshape(shape)
        z = x * self.scalar(rec["scale"], x)
        if rec["bias"] is not None:
            z = z + self.scalar(rec["bias"], x)
        y = ACT[rec["func"]](z.astype(np.float32).astype(np.float64))
        y = y.astype(np.float32).astype(np.float64)
        self.write(rec["dst"], y)
        if rec["reduce"] is not None:
            r = y.reshape(y.shape[0], -1).sum(axis=1)
            self.write(rec["reduce"]["dst"], r)

    def op_tensor_reduce(self, rec: Any) -> None:
        x = self.read(rec["src"])
        y = REDUCE[rec["alu"]](x, axis=tuple(rec["axes"]))
        if rec["negate"]:
            y = -y
        self.write(rec["dst"], y)

    def _affine(self, rec: Any) -> np.ndarray:
        shape = self.index(rec["dst"]).shape
        val = np.full(shape, float(rec["offset"]))
        p = np.arange(shape[0]).reshape((shape[0],) + (1,) * (len(shape) - 1))
        val = val + rec["channel_multiplier"] * p
        free = shape[1:]
        counts = [c for _, c in rec["pattern"]]
        n = int(np.prod(free)) if free else 1
        if int(np.prod(counts)) != n:
            raise ValueError("pattern does not cover the tile's free elements")
        f = np.zeros(counts)
        for k, (s, c) in enumerate(rec["pattern"]):
            sh = [1] * len(counts)
            sh[k] = c
            f = f + (np.arange(c) * s).reshape(sh)
        return val + f.reshape((1,) + tuple(free))

    def op_iota(self, rec: Any) -> None:
        self.write(rec["dst"], self._affine(rec))

    def op_affine_select(self, rec: Any) -> None:
        val = self._affine(rec)
        keep = ALU[rec["cmp"]](val, 0.0).astype(bool)
        x = self.read(rec["src"]).reshape(val.shape)
        self.write(rec["dst"], np.where(keep, x, _num(rec["value"])))

    def op_bn_stats(self, rec: Any) -> None:
        x = self.read(rec["src"])
        x = x.reshape(x.shape[0], -1)
        out = []
        for part in (x[:, 0::2], x[:, 1::2]):
            n = part.shape[1]
            mean = part.mean(axis=1) if n else np.zeros(x.shape[0])
            var = part.var(axis=1) if n else np.zeros(x.shape[0])
            out += [np.full(x.shape[0], float(n)), mean, var * n]
        self.write(rec["dst"], np.stack(out, axis=1))

    def op_bn_aggr(self, rec: Any) -> None:
        x = self.read(rec["src"])
        x = x.reshape(x.shape[0], -1, 3)
        cnt, mean, m2 = x[:, :, 0], x[:, :, 1], x[:, :, 2]
        n = cnt.sum(axis=1)
        mu = (cnt * mean).sum(axis=1) / n
        var = (m2.sum(axis=1) + (cnt * (mean - mu[:, None]) ** 2).sum(axis=1)) / n
        self.write(rec["dst"], np.stack([mu, var], axis=1))

    def outputs(self) -> Dict[str, np.ndarray]:
        out = {}
        for i in self.doc["outputs"]:
            t = self.tensors[i]
            out[t["name"]] = self.images[i].reshape(t["shape"]).copy()
        return out


class Handle:
    """What ``runner`` returns (the handle of ``ntile._native.nki_run``)."""

    def __init__(self, doc: Dict[str, Any], ref: Optional[Reference]) -> None:
        self.doc = doc
        self.ref = ref

    def outputs(self) -> Dict[str, np.ndarray]:
        if self.ref is None:
            raise ValueError("no data was given")
        return self.ref.outputs()

    def report(self) -> Dict[str, Any]:
        n = sum(1 for r in self.doc["ops"] if r["op"] not in ("loop_begin", "iteration", "loop_end"))
        return {"modeled_time_us": float(n), "target": self.doc["target"], "instructions": n}

    def trace(self, path: str) -> None:
        with open(path, "w", encoding="utf-8") as f:
            json.dump({"traceEvents": []}, f)

    def svg(self) -> str:
        return "<svg xmlns='http://www.w3.org/2000/svg'/>"

    def emit(self, form: str) -> str:
        return f"; {form} of {self.doc['kernel']}\n"


def run_trace(trace_json: str, inputs: Optional[Dict[str, np.ndarray]]) -> Reference:
    doc = json.loads(trace_json)
    ref = Reference(doc, inputs or {})
    ref.run()
    return ref


def runner(trace_json: str, inputs: Optional[Dict[str, np.ndarray]], options: Dict[str, Any]) -> Handle:
    doc = json.loads(trace_json)
    if inputs is None:
        return Handle(doc, None)
    ref = Reference(doc, inputs)
    ref.run()
    return Handle(doc, ref)
