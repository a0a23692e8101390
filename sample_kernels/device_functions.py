"""A kernel calling device functions: values, tuples, nesting, and one function specialised twice."""
import math

import numpy as np

from kdebug import cuda
from kdebug.cuda import float32


@cuda.jit(device=True)
def clamp(x, lo, hi):
    return min(max(x, lo), hi)


@cuda.jit(device=True)
def polar(x, y):
    """A tuple: radius and angle."""
    return math.sqrt(x * x + y * y), math.atan2(y, x)


@cuda.jit(device=True)
def collatz_steps(n):
    steps = 0
    while n != 1:
        n = n // 2 if n % 2 == 0 else 3 * n + 1
        steps += 1
    return steps


@cuda.jit(device=True)
def score(x, y):
    r, theta = polar(x, y)
    return clamp(r, 0.0, 2.0) * math.cos(theta)


@cuda.jit
def kernel(xs, ys, radius, angle, scores, steps):
    i = cuda.grid(1)
    if i < xs.size:
        r, theta = polar(xs[i], ys[i])
        radius[i] = r
        angle[i] = theta
        scores[i] = score(xs[i], ys[i])
        steps[i] = clamp(collatz_steps(i + 1), 0, 100)  # clamp again, now on integers


@cuda.jit
def kernel32(xs, out):
    i = cuda.grid(1)
    if i < xs.size:
        out[i] = clamp(xs[i], float32(-0.5), float32(0.5))  # clamp specialised for float32


def collatz_reference(n):
    steps = 0
    while n != 1:
        n = n // 2 if n % 2 == 0 else 3 * n + 1
        steps += 1
    return steps


def main(n=5000):
    rng = np.random.default_rng(3)
    xs, ys = rng.standard_normal(n), rng.standard_normal(n)
    radius, angle, scores = np.zeros(n), np.zeros(n), np.zeros(n)
    steps = np.zeros(n, dtype=np.int64)
    kernel[(n + 127) // 128, 128](xs, ys, radius, angle, scores, steps)
    np.testing.assert_allclose(radius, np.hypot(xs, ys), rtol=1e-6)
    np.testing.assert_allclose(angle, np.arctan2(ys, xs), rtol=1e-6)
    np.testing.assert_allclose(scores, np.clip(np.hypot(xs, ys), 0, 2) * np.cos(np.arctan2(ys, xs)),
                               rtol=1e-6, atol=1e-12)
    np.testing.assert_array_equal(steps, [min(collatz_reference(k + 1), 100) for k in range(n)])
    x32 = xs.astype(np.float32)
    out32 = np.zeros_like(x32)
    kernel32[(n + 127) // 128, 128](x32, out32)
    np.testing.assert_array_equal(out32, np.clip(x32, np.float32(-0.5), np.float32(0.5)))
    print(f"device_functions: {n} elements through clamp, polar, score and collatz_steps match numpy")


if __name__ == "__main__":
    main()
