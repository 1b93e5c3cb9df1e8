# examples/python/nki_matmul.py
import sys
from pathlib import Path

import numpy as np
import ntile.nki
ntile.nki.install()                   # from here on, `import neuronxcc.nki` resolves to ntile

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "nki" / "legacy"))
from neuronxcc import nki
import neuronxcc.nki.language as nl
from matmul import matmul_tiled       # the kernel file, unchanged

rng = np.random.default_rng(0)
lhsT = rng.standard_normal((1024, 256), dtype=np.float32)
rhs = rng.standard_normal((1024, 2048), dtype=np.float32)
out = nki.simulate_kernel(matmul_tiled, lhsT, rhs)      # or matmul_tiled(lhsT, rhs)
print(out.shape, out.dtype, np.abs(out - lhsT.T.astype(np.float64) @ rhs).max())

bench = nki.benchmark(warmup=5, iters=10)(matmul_tiled)
bench(nki.tensor[[4096, 1024], nl.bfloat16], nki.tensor[[4096, 4096], nl.bfloat16])
print(bench.benchmark_result.nc_latency.get_latency_percentile(99), "us")

prof = ntile.nki.profile(matmul_tiled, lhsT, rhs)
print(prof)
print(prof.report["hfu"], [(a["name"], a["buffer"], a["buffers"]) for a in prof.report["allocations"]])
prof.trace("matmul_tiled.json")       # Perfetto / chrome://tracing
open("matmul_tiled.svg", "w").write(prof.svg())
