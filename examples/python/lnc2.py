# examples/python/lnc2.py
import sys
from pathlib import Path

import numpy as np
import ntile
import ntile.nki
ntile.nki.install()                   # `import nki` in the kernel file resolves to ntile

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "nki" / "current"))
from two_cores import matmul_columns  # the kernel file, unchanged

one, two = ntile.model(2048, 2048, 2048), ntile.model(2048, 2048, 2048, lnc=2)
print(f"gemm: {one.modeled_time_us:.1f} us on one core, {two.modeled_time_us:.1f} us on two,",
      "split by", two.report["lnc"]["split"])

rng = np.random.default_rng(0)
lhsT = rng.standard_normal((512, 256), dtype=np.float32)
rhs = rng.standard_normal((512, 2048), dtype=np.float32)
whole = ntile.nki.profile(matmul_columns, lhsT, rhs)          # one core, all columns
halves = ntile.nki.profile(matmul_columns[2], lhsT, rhs)      # kernel[2]: LNC=2
print(np.abs(halves.outputs - lhsT.T.astype(np.float64) @ rhs).max())
print(whole, halves, sep="\n")
print([round(c["modeled_time_us"], 1) for c in halves.report["chip"]["cores"]],
      round(halves.report["chip"]["hbm_shared_busy"], 2))
halves.trace("lnc2.json")             # one process per core in Perfetto
