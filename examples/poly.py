"""SlangPy's polynomial example (seed 003) through diffc's Python API.

    python examples/poly.py     # forward 9 23 41 63; x.grad 12 16 20 24, then doubled
"""

from pathlib import Path

import numpy as np

import diffc


def main() -> None:
    m = diffc.load_module(Path(__file__).with_name("poly.slang"))
    x = diffc.Tensor.from_numpy(np.array([1, 2, 3, 4], np.float32)).with_grads(zero=True)
    y = m.polynomial(a=2, b=8, c=-1, x=x, _result="tensor")  # 2x^2 + 8x - 1
    print("result:", " ".join(f"{v:g}" for v in y.to_numpy()))
    y = y.with_grads()
    y.grad.copy_from_numpy(np.ones(4, np.float32))
    m.polynomial.bwds(a=2, b=8, c=-1, x=x, _result=y)  # x.grad += 4x + 8
    print("x.grad:", " ".join(f"{v:g}" for v in x.grad.to_numpy()))
    m.polynomial.bwds(a=2, b=8, c=-1, x=x, _result=y)  # gradients accumulate, as in SlangPy
    print("x.grad after a second bwds:", " ".join(f"{v:g}" for v in x.grad.to_numpy()))


if __name__ == "__main__":
    main()
