# examples/python/pool_sweep.py
from concurrent.futures import ProcessPoolExecutor
import itertools

import ntile


def modeled(shape):
    m, k, n = shape
    r = ntile.model(m, k, n, target="trn2", flags=["--hbm-dtype", "bf16"])
    return shape, r.report["schedule"], r.report["modeled_time_us"], r.report["hfu"]


if __name__ == "__main__":
    shapes = list(itertools.product([128, 1024], [1024, 4096], [512, 2048]))
    with ProcessPoolExecutor() as pool:
        for (m, k, n), schedule, us, hfu in pool.map(modeled, shapes):
            print(f"{m:>5} x {k:>5} x {n:>5}  {schedule:<11} {us:8.1f} us  HFU {hfu:.2f}")
