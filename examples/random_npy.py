"""Write random `.npy` inputs for ntile's examples: python3 examples/random_npy.py SPEC... 

Each SPEC is NAME=SHAPE[:DTYPE[:HIGH]]: SHAPE is dimensions joined by `x` (`300x1000`), DTYPE
is float32 (the default: standard normal values times --scale) or int32 (uniform integers in
[0, HIGH)). One generator seeded with --seed (default 0) fills the files in the order given,
so the same command always writes the same bytes.
"""

import argparse
import sys

import numpy as np


def parse_spec(spec):
    name, sep, rest = spec.partition("=")
    if not sep or not name:
        raise ValueError(f"`{spec}`: expected NAME=SHAPE[:DTYPE[:HIGH]]")
    parts = rest.split(":")
    try:
        shape = tuple(int(d) for d in parts[0].split("x"))
    except ValueError:
        raise ValueError(f"`{spec}`: the shape `{parts[0]}` is not dimensions joined by `x`") from None
    if any(d <= 0 for d in shape):
        raise ValueError(f"`{spec}`: every dimension must be positive")
    dtype = parts[1] if len(parts) > 1 else "float32"
    if dtype not in ("float32", "int32"):
        raise ValueError(f"`{spec}`: dtype must be float32 or int32, not `{dtype}`")
    high = None
    if dtype == "int32":
        if len(parts) != 3:
            raise ValueError(f"`{spec}`: an int32 array needs its bound: NAME=SHAPE:int32:HIGH")
        high = int(parts[2])
    elif len(parts) > 2:
        raise ValueError(f"`{spec}`: only int32 arrays take a bound")
    return name, shape, dtype, high


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("specs", nargs="+", metavar="NAME=SHAPE[:DTYPE[:HIGH]]")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--scale", type=float, default=1.0, help="multiplies the float32 values")
    args = parser.parse_args(argv)
    try:
        specs = [parse_spec(s) for s in args.specs]
    except ValueError as e:
        parser.error(str(e))
    rng = np.random.default_rng(args.seed)
    for name, shape, dtype, high in specs:
        if dtype == "int32":
            array = rng.integers(0, high, shape, dtype=np.int32)
        else:
            array = (rng.standard_normal(shape) * args.scale).astype(np.float32)
        np.save(name, array)
        print(f"wrote {name} {array.dtype} {array.shape}")


if __name__ == "__main__":
    main(sys.argv[1:])
