"""2-D five-point stencil: a few Jacobi steps of the heat equation on a grid, one thread per cell."""
import numpy as np

from kdebug import cuda

ALPHA = 0.2  # a global: frozen into the kernel when it is compiled


@cuda.jit
def jacobi_step(src, dst):
    i, j = cuda.grid(2)
    ny, nx = src.shape
    if i >= ny or j >= nx:
        return
    if i == 0 or j == 0 or i == ny - 1 or j == nx - 1:
        dst[i, j] = src[i, j]  # fixed boundary
    else:
        lap = src[i - 1, j] + src[i + 1, j] + src[i, j - 1] + src[i, j + 1] - 4 * src[i, j]
        dst[i, j] = src[i, j] + ALPHA * lap


@cuda.jit
def count_hot(grid, threshold, counts):
    """Integer output: per row, how many cells are above the threshold."""
    i = cuda.grid(1)
    if i < grid.shape[0]:
        n = 0
        for j in range(grid.shape[1]):
            if grid[i, j] > threshold:
                n += 1
        counts[i] = n


def reference(u, steps):
    u = u.copy()
    for _ in range(steps):
        v = u.copy()
        v[1:-1, 1:-1] = u[1:-1, 1:-1] + ALPHA * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:]
                                                 - 4 * u[1:-1, 1:-1])
        u = v
    return u


def main(ny=96, nx=130, steps=20):
    rng = np.random.default_rng(1)
    u0 = rng.random((ny, nx))
    u0[ny // 3: ny // 2, nx // 4: nx // 2] = 5.0  # a hot patch
    a, b = cuda.to_device(u0), cuda.device_array_like(u0)
    block = (16, 16)
    grid = ((ny + block[0] - 1) // block[0], (nx + block[1] - 1) // block[1])
    for _ in range(steps):
        jacobi_step[grid, block](a, b)
        a, b = b, a
    got = a.copy_to_host()
    ref = reference(u0, steps)
    np.testing.assert_allclose(got, ref, rtol=1e-6)
    counts = np.zeros(ny, dtype=np.int32)
    count_hot[(ny + 63) // 64, 64](a, 1.0, counts)
    np.testing.assert_array_equal(counts, (ref > 1.0).sum(axis=1))
    print(f"stencil2d: {steps} Jacobi steps on a {ny}x{nx} grid match numpy")


if __name__ == "__main__":
    main()
