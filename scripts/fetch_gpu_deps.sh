#!/usr/bin/env bash
# Fetch what scripts/gpu_check.sh installs on a GPU machine that has no network, into .whl/
# (git-ignored; carry it to the machine). Run from anywhere, on a machine that reaches PyPI:
#
#   bash scripts/fetch_gpu_deps.sh [DEST]        # DEST defaults to .whl in the repo root
#
# What it downloads, for CPython 3.12 on x86-64 Linux (the GPU machine's Python):
#   pycuda 2026.1           source only on PyPI: gpu_check.sh builds it there against the CUDA driver
#   pytools, platformdirs,  pycuda's runtime dependencies (pytools needs siphash24; mako needs
#   siphash24, mako         MarkupSafe and pytools typing-extensions, which the GPU image has)
#   llvmlite 0.50.0         kdebug's LLVM; installed there only when the image's llvmlite is another
#                           version (about 60 MB of the 64 MB a device call may carry)
#
# The exact commands (pip download with --no-deps, so each dependency is named here):
#   pip download --no-deps --no-binary=:all: --no-build-isolation -d DEST pycuda==2026.1
#   pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
#       --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 \
#       --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 --platform manylinux1_x86_64 \
#       -d DEST pytools==2026.1.1 platformdirs==4.14.8 siphash24==1.9 mako==1.4.3 llvmlite==0.50.0
set -euo pipefail
cd "$(dirname "$0")/.."
DEST=${1:-.whl}
PYCUDA=pycuda==2026.1
WHEELS=(pytools==2026.1.1 platformdirs==4.14.8 siphash24==1.9 mako==1.4.3 llvmlite==0.50.0)
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
echo "fetch_gpu_deps: in $DEST:"
ls -l "$DEST"
du -sh "$DEST"
