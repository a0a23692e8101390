"""A Hessian-vector product by forward over reverse: grad(gradient(f, argnum=i), argnum=j).

    kernel hvp ──gradient──▶ gradient(f)
               ──grad──────▶ grad(gradient(f, argnum=0))            ──grad (body)──▶ gradient(f, argnum=0)
               ──grad──────▶ grad(gradient(f, argnum=0), argnum=1)  ──grad (body)──▶ gradient(f, argnum=0)
               ──grad──────▶ grad(gradient(f, argnum=1))            ──grad (body)──▶ gradient(f, argnum=1)
               ──grad──────▶ grad(gradient(f, argnum=1), argnum=1)  ──grad (body)──▶ gradient(f, argnum=1)

One reverse sweep gives the gradient of f (both partials); a forward-mode derivative of
a reverse-mode job gives a row of the Hessian, and H v = sum_j v_j d/dx_j grad f. The
forward transform reads the *body* of the reverse job, its tape and reverse sweep included,
so the nested jobs need the shared job table: under toplevel the reverse job's marker is
still in place when the forward job is compiled (Enzyme.jl#2189, second order on GPUs).
"""
import math

import numpy as np

import kdebug
from kdebug import cuda


@cuda.jit(device=True)
def f(x, y):
    s = 0.0
    for k in range(3):  # a loop whose value is overwritten: the tape keeps it per trip
        s = s + math.sin(x * (k + 1)) * y
    return (1.0 - x) ** 2 + 10.0 * (y - x * x) ** 2 + s


gradf = kdebug.gradient(f)
hxx = kdebug.grad(kdebug.gradient(f, argnum=0), argnum=0)
hxy = kdebug.grad(kdebug.gradient(f, argnum=0), argnum=1)
hyx = kdebug.grad(kdebug.gradient(f, argnum=1), argnum=0)
hyy = kdebug.grad(kdebug.gradient(f, argnum=1), argnum=1)


@cuda.jit
def hvp(out, xs, ys, vx, vy):
    i = cuda.grid(1)
    if i < xs.size:
        x, y = xs[i], ys[i]
        gx, gy = gradf(x, y)
        out[0, i] = gx
        out[1, i] = gy
        out[2, i] = hxx(x, y) * vx + hxy(x, y) * vy
        out[3, i] = hyx(x, y) * vx + hyy(x, y) * vy


def main(n=64, vx=0.5, vy=-1.5):
    xs = np.linspace(-1.0, 1.5, n)
    ys = np.linspace(2.0, -0.5, n)
    out = np.zeros((4, n))
    hvp[(n + 31) // 32, 32](out, xs, ys, vx, vy)
    ks = np.arange(1, 4)[:, None]
    fx = -2 * (1 - xs) - 40 * xs * (ys - xs * xs) + (ks * np.cos(ks * xs) * ys).sum(0)
    fy = 20 * (ys - xs * xs) + np.sin(ks * xs).sum(0)
    fxx = 2 - 40 * ys + 120 * xs * xs - (ks * ks * np.sin(ks * xs) * ys).sum(0)
    fxy = -40 * xs + (ks * np.cos(ks * xs)).sum(0)
    fyy = 20.0
    np.testing.assert_allclose(out[0], fx, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(out[1], fy, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(out[2], fxx * vx + fxy * vy, rtol=1e-12, atol=1e-11)
    np.testing.assert_allclose(out[3], fxy * vx + fyy * vy, rtol=1e-12, atol=1e-11)
    print(f"gradient_hvp: gradient and Hessian-vector product of a Rosenbrock function plus a loop, {n} points")


if __name__ == "__main__":
    main()
