#!/usr/bin/env bash
# Fetch what scripts/gpu_check.sh installs on a GPU machine that has no network, into .whl/
# (git-ignored; carry it to the machine). Run from anywhere, on a machine that reaches PyPI:
#
#   bash scripts/fetch_gpu_deps.sh [--prebuild] [--with-llvmlite] [DEST]   # DEST defaults to .whl
#
# --prebuild also builds a fallback pycuda wheel here for CPython 3.12 (python3.12 on PATH or
# $PYTHON312, with its headers; and the CUDA toolkit's headers), linked against an empty stand-in for libcuda.so.1: the
# real driver library resolves its symbols on the GPU machine. gpu_check.sh installs it only when
# building from the sdist there fails (a Python without headers, say).
#
# What it downloads, for CPython 3.12 on x86-64 Linux (the GPU machine's Python):
#   pycuda 2026.1           source only on PyPI: gpu_check.sh builds it there against the CUDA driver
#   pytools, platformdirs,  pycuda's runtime dependencies (pytools needs siphash24; mako needs
#   siphash24, mako         MarkupSafe and pytools typing-extensions, which the GPU image has)
#   llvmlite 0.50.0         only with --with-llvmlite: kdebug's LLVM, for an image whose llvmlite is
#                           another version (numba 0.68 already has 0.50); it is 60 MB of the 64 MB
#                           a device call may carry, so carry it without the --prebuild wheel
#
# The exact commands (pip download with --no-deps, so each dependency is named here):
#   pip download --no-deps --no-binary=:all: --no-build-isolation -d DEST pycuda==2026.1
#   pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
#       --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 \
#       --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 --platform manylinux1_x86_64 \
#       -d DEST pytools==2026.1.1 platformdirs==4.14.8 siphash24==1.9 mako==1.4.3 [llvmlite==0.50.0]
set -euo pipefail
cd "$(dirname "$0")/.."
PREBUILD=0
WHEELS=(pytools==2026.1.1 platformdirs==4.14.8 siphash24==1.9 mako==1.4.3)
while [ $# -gt 0 ]; do
    case "$1" in
        --prebuild) PREBUILD=1; shift ;;
        --with-llvmlite) WHEELS+=(llvmlite==0.50.0); shift ;;
        -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
        -*) echo "fetch_gpu_deps: unknown option $1" >&2; exit 2 ;;
        *) break ;;
    esac
done
DEST=${1:-.whl}
PY312=${PYTHON312:-python3.12}
PYCUDA=pycuda==2026.1
PLATFORMS=(--platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64
           --platform manylinux2014_x86_64 --platform manylinux1_x86_64)
mkdir -p "$DEST"

# pip reads an sdist's metadata before saving it, which needs setuptools and wheel: use a
# throwaway virtual environment when this interpreter lacks them.
PY=python3
if ! python3 -c "import setuptools, wheel" 2>/dev/null; then
    VENV=$(mktemp -d)
    trap 'rm -rf "$VENV"' EXIT
    python3 -m venv "$VENV"
    "$VENV/bin/python" -m pip install -q setuptools wheel numpy
    PY="$VENV/bin/python"
fi
"$PY" -m pip download -q --no-deps --no-binary=:all: --no-build-isolation -d "$DEST" "$PYCUDA"
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    "${PLATFORMS[@]}" -d "$DEST" "${WHEELS[@]}"
if [ $PREBUILD = 1 ]; then
    "$PY312" -c 'import sys; assert sys.version_info[:2] == (3, 12)' 2>/dev/null ||
        { echo "fetch_gpu_deps: --prebuild needs CPython 3.12: python3.12 on PATH or PYTHON312" >&2; exit 2; }
    DEST_ABS=$(cd "$DEST" && pwd)
    CUDA_ROOT=${CUDA_HOME:-$(python3 -c "from kdebug.targets.ptx import cuda_home; print(cuda_home() or '')")}
    [ -f "$CUDA_ROOT/include/cuda.h" ] || { echo "fetch_gpu_deps: --prebuild needs the CUDA headers (set CUDA_HOME)" >&2; exit 2; }
    B=$(mktemp -d)
    "$PY312" -m venv "$B/venv"
    "$B/venv/bin/python" -m pip install -q setuptools wheel numpy
    echo 'void kdebug_libcuda_stand_in(void) {}' > "$B/stub.c"
    mkdir "$B/lib"
    gcc -shared -fPIC -Wl,-soname,libcuda.so.1 -o "$B/lib/libcuda.so" "$B/stub.c"
    tar xzf "$DEST"/pycuda-*.tar.gz -C "$B"
    (cd "$B"/pycuda-*/ &&
        "$B/venv/bin/python" configure.py --cuda-root="$CUDA_ROOT" --no-cuda-enable-curand \
            --cudadrv-lib-dir="$B/lib" >/dev/null &&
        "$B/venv/bin/python" setup.py build_ext -j "$(nproc)" bdist_wheel -d "$DEST_ABS" \
            > "$B/build.log" 2>&1) || { tail -20 "$B/build.log" >&2; exit 1; }
    rm -rf "$B"
fi
echo "fetch_gpu_deps: in $DEST:"
ls -l "$DEST"
du -sh "$DEST"
