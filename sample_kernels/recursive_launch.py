"""Deep recursion through device-side launches (CUDA.jl's "deep recursion" test).

kernel_a launches kernel_b, which launches kernel_c, which launches kernel_a once
more with a flag that stops the second round. Each writes its letter into the
output buffer at its depth, so the buffer reads "a b c a b c". The job graph has
a cycle: kernel_c asks for kernel_a while kernel_a is being compiled — a
re-entrant codegen request. The worklist and toplevel strategies resolve it to a
reference and compile each kernel once; the recursive strategy would loop forever,
and kdebug stops it with the cycle named.
"""
import numpy as np

from kdebug import cuda


@cuda.jit
def kernel_a(out, depth, again):
    out[depth] = 97  # 'a'
    kernel_b[1, 1](out, depth + 1, again)


@cuda.jit
def kernel_b(out, depth, again):
    out[depth] = 98  # 'b'
    kernel_c[1, 1](out, depth + 1, again)


@cuda.jit
def kernel_c(out, depth, again):
    out[depth] = 99  # 'c'
    if again:
        kernel_a[1, 1](out, depth + 1, False)


def main():
    out = np.zeros(6, dtype=np.int32)
    kernel_a[1, 1](out, 0, True)
    text = " ".join(chr(c) for c in out)
    assert text == "a b c a b c", text
    print(text)


if __name__ == "__main__":
    main()
