"""saxpy: out = a * x + y, one thread per element."""
import numpy as np

from kdebug import cuda


@cuda.jit
def saxpy(a, x, y, out):
    i = cuda.grid(1)
    if i < x.size:
        out[i] = a * x[i] + y[i]


def main(n=1 << 16):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    d_x, d_y = cuda.to_device(x), cuda.to_device(y)
    d_out = cuda.device_array_like(x)
    threads = 256
    saxpy[(n + threads - 1) // threads, threads](np.float32(2.5), d_x, d_y, d_out)
    out = d_out.copy_to_host()
    np.testing.assert_allclose(out, np.float32(2.5) * x + y, rtol=1e-6)
    print(f"saxpy: {n} elements match numpy")


if __name__ == "__main__":
    main()
