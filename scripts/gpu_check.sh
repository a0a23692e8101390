#!/usr/bin/env bash
# kdebug's GPU check: one script for a lent GPU machine (Python 3.12, the CUDA 13 toolkit,
# numba-cuda, CuPy, PyTorch; no pycuda, no network). It finishes in well under 8 minutes.
#
# Before, on a machine with network, from the repo root (the folder is git-ignored):
#   bash scripts/fetch_gpu_deps.sh            # -> .whl/: pycuda's sdist and the wheels it needs
# Then, on the GPU machine, with .whl carried along:
#   bash scripts/gpu_check.sh [options]
#
# Options:
#   --wheels DIR   where the sdist and wheels are (default: .whl in the repo root)
#   --work DIR     build and install folder (default: a folder under $TMPDIR or /tmp)
#   --steps LIST   comma-separated, in this order: build,test,samples,bench (default: all four)
#   --quick        small benchmark sizes
#   --samples LIST only these sample_kernels (names without .py, comma-separated; default: all)
#   --compare A,B  the two backends the samples step compares (default: cpu,gpu; cpu,cpu checks
#                  the step itself on a machine without a GPU)
#   --python PY    the interpreter (default: python3)
#   -h, --help     this text
#
# Steps:
#   build    build pycuda from its sdist against this machine's CUDA driver (libcuda) and toolkit
#            headers, and install its runtime wheels (and llvmlite 0.50 when the image has another)
#   test     pytest tests/ptx_and_gpu/test_gpu.py on the GPU (the per-sample comparison is the next step)
#   samples  every sample_kernels/*.py run on the CPU backend and on the GPU: same output
#   bench    benchmarks/bench_gpu.py: saxpy bandwidth against a device-to-device copy, and a tiled
#            matmul against numba-cuda compiling the same source; its table is printed last
# Logs go to $OUT when it is set (the device tool brings that folder back), else to the work folder.
#
# Exit status: 0 every step passed, 1 a step failed, 2 bad usage or a missing prerequisite.
set -uo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
WHEELS=$REPO/.whl
WORK=${TMPDIR:-/tmp}/kdebug-gpu-check
STEPS=build,test,samples,bench
QUICK=""
PY=python3
SAMPLES=""
COMPARE=cpu,gpu

usage() { sed -n '2,/^set -uo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; }
die() { echo "gpu_check: $*" >&2; exit 2; }

while [ $# -gt 0 ]; do
    case "$1" in
        --wheels) [ $# -ge 2 ] || die "--wheels needs a folder"; WHEELS=$2; shift 2 ;;
        --work) [ $# -ge 2 ] || die "--work needs a folder"; WORK=$2; shift 2 ;;
        --steps) [ $# -ge 2 ] || die "--steps needs a list"; STEPS=$2; shift 2 ;;
        --quick) QUICK=--quick; shift ;;
        --samples) [ $# -ge 2 ] || die "--samples needs a list"; SAMPLES=$2; shift 2 ;;
        --compare) [ $# -ge 2 ] || die "--compare needs two backends"; COMPARE=$2; shift 2 ;;
        --python) [ $# -ge 2 ] || die "--python needs an interpreter"; PY=$2; shift 2 ;;
        -h|--help) usage; exit 0 ;;
        *) echo "gpu_check: unknown option: $1 (see --help)" >&2; exit 2 ;;
    esac
done
for s in ${STEPS//,/ }; do
    case "$s" in build|test|samples|bench) ;; *) die "unknown step '$s' (steps: build,test,samples,bench)" ;; esac
done
want() { [[ ",$STEPS," == *",$1,"* ]]; }
[[ "$COMPARE" =~ ^(cpu|gpu|auto),(cpu|gpu|auto)$ ]] || die "--compare takes two of cpu, gpu, auto: A,B"
BACK_A=${COMPARE%,*}
BACK_B=${COMPARE#*,}
needs_gpu() { want test || want bench || { want samples && [[ ",$COMPARE," == *",gpu,"* ]]; }; }

mkdir -p "$WORK" || die "cannot create $WORK"
LOGS=${OUT:-$WORK}
mkdir -p "$LOGS"
SITE=$WORK/site
START=$SECONDS
declare -a SUMMARY=()
FAILED=0
note() { echo "== gpu_check [$((SECONDS - START))s] $*"; }
result() { SUMMARY+=("$1"); case "$1" in *FAIL*) FAILED=1 ;; esac; }

"$PY" -c 'import sys; assert sys.version_info >= (3, 11)' 2>/dev/null || die "$PY is not Python >= 3.11"
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | sed 's/^/gpu: /'

# ---- the CUDA toolkit (headers, libcudadevrt.a) and the driver library ------------------------------
cuda_root() {
    local d exe
    for d in "${CUDA_HOME:-}" "${CUDA_PATH:-}" "${CUDA_ROOT:-}"; do
        [ -n "$d" ] && [ -f "$d/include/cuda.h" ] && { echo "$d"; return; }
    done
    for exe in nvcc ptxas; do
        d=$(command -v "$exe") || continue
        d=$(readlink -f "$d")
        # a one-line wrapper script that execs the real tool
        if head -c2 "$d" | grep -q '#!'; then
            local real
            real=$(grep -o 'exec [^ ]*' "$d" | head -1 | cut -d' ' -f2)
            [ -n "$real" ] && [ -x "$real" ] && d=$(readlink -f "$real")
        fi
        d=$(dirname "$(dirname "$d")")
        [ -f "$d/include/cuda.h" ] && { echo "$d"; return; }
    done
}

find_libcuda() {  # a folder holding libcuda.so.1 (the driver): ldconfig, LD_LIBRARY_PATH, or where dlopen finds it
    local f d
    f=$(ldconfig -p 2>/dev/null | awk '/libcuda\.so\.1 .*x86-64/ {print $NF; exit}')
    [ -n "$f" ] && [ -e "$f" ] && { dirname "$f"; return; }
    IFS=: read -ra dirs <<< "${LD_LIBRARY_PATH:-}"
    for d in "${dirs[@]}"; do
        [ -n "$d" ] && [ -e "$d/libcuda.so.1" ] && { echo "$d"; return; }
    done
    "$PY" - <<'EOF' 2>/dev/null
import ctypes, os
ctypes.CDLL("libcuda.so.1")
for line in open("/proc/self/maps"):
    path = line.split()[-1]
    if os.path.basename(path).startswith("libcuda.so"):
        print(os.path.dirname(path))
        break
EOF
}

CUDA_ROOT_DIR=$(cuda_root)
if [ -n "$CUDA_ROOT_DIR" ]; then
    export CUDA_HOME=$CUDA_ROOT_DIR
    note "CUDA toolkit: $CUDA_ROOT_DIR"
elif want build || needs_gpu; then
    die "no CUDA toolkit found (nvcc on PATH, or CUDA_HOME with include/cuda.h)"
fi
SDIST=$(ls "$WHEELS"/pycuda-*.tar.gz 2>/dev/null | head -1)
PYCUDA_SRC=$WORK/$(basename "${SDIST:-pycuda-none.tar.gz}" .tar.gz)
export PYTHONPATH=$SITE:$PYCUDA_SRC:$REPO${PYTHONPATH:+:$PYTHONPATH}

# ---- build ----------------------------------------------------------------------------------------
if want build; then
    [ -n "$SDIST" ] || die "no pycuda sdist in $WHEELS: run scripts/fetch_gpu_deps.sh where there is network, and carry .whl"
    LIBCUDA_DIR=$(find_libcuda)
    if [ -z "$LIBCUDA_DIR" ]; then
        echo "gpu_check: no libcuda.so.1 (the NVIDIA driver library) found by ldconfig or in LD_LIBRARY_PATH:" >&2
        echo "gpu_check: pycuda cannot be built or run on this machine (it needs a GPU driver)" >&2
        exit 2
    fi
    note "build: pycuda from $(basename "$SDIST") against $LIBCUDA_DIR/libcuda.so.1"
    LINKDIR=$WORK/libcuda-link  # the linker wants libcuda.so; the driver folder may only have .so.1
    mkdir -p "$LINKDIR" && ln -sf "$LIBCUDA_DIR/libcuda.so.1" "$LINKDIR/libcuda.so"
    if "$PY" -c "import pycuda._driver" 2>/dev/null; then
        note "build: pycuda already built in $PYCUDA_SRC"
        result "build    ok (already built)"
    else
        rm -rf "$PYCUDA_SRC" && tar xzf "$SDIST" -C "$WORK"
        (
            cd "$PYCUDA_SRC" &&
            "$PY" configure.py --cuda-root="$CUDA_ROOT_DIR" --no-cuda-enable-curand \
                --cudadrv-lib-dir="$LINKDIR,$CUDA_ROOT_DIR/lib64,$CUDA_ROOT_DIR/lib64/stubs" >/dev/null &&
            timeout 300 "$PY" setup.py build_ext --inplace -j "$(nproc)"
        ) > "$LOGS/pycuda-build.log" 2>&1
        if [ $? -eq 0 ] && "$PY" -c "import pycuda._driver" 2>>"$LOGS/pycuda-build.log"; then
            result "build    ok (pycuda built in $((SECONDS - START))s)"
        else
            tail -20 "$LOGS/pycuda-build.log" >&2
            echo "gpu_check: building pycuda failed (log: $LOGS/pycuda-build.log)" >&2
            prebuilt=$(ls "$WHEELS"/pycuda-*-cp3*-linux_x86_64.whl 2>/dev/null | head -1)
            [ -n "$prebuilt" ] || exit 1
            echo "gpu_check: installing the prebuilt $(basename "$prebuilt") instead (fetch_gpu_deps.sh --prebuild)" >&2
            rm -rf "$PYCUDA_SRC"
            "$PY" -m pip install -q --no-index --no-deps --no-compile --target "$SITE" "$prebuilt" >>"$LOGS/pycuda-build.log" 2>&1
            "$PY" -c "import pycuda._driver" || { echo "gpu_check: the prebuilt pycuda does not load either" >&2; exit 1; }
            result "build    ok (prebuilt pycuda wheel: the sdist build failed)"
        fi
    fi
    wheels=()
    for name in pytools platformdirs siphash24 mako; do
        w=$(ls "$WHEELS"/"$name"-*.whl 2>/dev/null | head -1)
        [ -n "$w" ] && wheels+=("$w")
    done
    if ! "$PY" -c 'import llvmlite, sys; sys.exit(not llvmlite.__version__.startswith("0.50"))' 2>/dev/null; then
        w=$(ls "$WHEELS"/llvmlite-0.50*.whl 2>/dev/null | head -1)
        [ -n "$w" ] || die "kdebug needs llvmlite 0.50 and neither the image ($("$PY" -c 'import llvmlite; print(llvmlite.__version__)' 2>&1 | tail -1)) nor $WHEELS has it: fetch_gpu_deps.sh --with-llvmlite"
        wheels+=("$w")
    fi
    if [ ${#wheels[@]} -gt 0 ]; then
        "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$SITE" \
            "${wheels[@]}" > "$LOGS/pip.log" 2>&1 || { cat "$LOGS/pip.log" >&2; die "installing the wheels failed"; }
    fi
fi

needs_gpu && { "$PY" - <<'EOF' || die "pycuda does not start here (see above); run the build step first"; }
import pycuda.driver as drv
drv.init()
d = drv.Device(0)
print(f"pycuda: {d.name()}, compute capability {d.compute_capability()}, {drv.get_version()}")
from kdebug.session.live import gpu_available
ok, why = gpu_available()
assert ok, why
EOF

# ---- test -----------------------------------------------------------------------------------------
if want test; then
    note "test: tests/ptx_and_gpu/test_gpu.py"
    (cd "$REPO" && timeout 300 "$PY" -m pytest -q -p no:cacheprovider tests/ptx_and_gpu/test_gpu.py \
        -k "not same_result_on_gpu_and_cpu") 2>&1 | tee "$LOGS/test_gpu.log" | tail -15
    if [ "${PIPESTATUS[0]}" -eq 0 ]; then
        result "test     ok ($(grep -Eo '[0-9]+ passed' "$LOGS/test_gpu.log" | tail -1))"
    else
        result "test     FAIL (log: $LOGS/test_gpu.log)"
    fi
fi

# ---- samples --------------------------------------------------------------------------------------
if want samples; then
    note "samples: the $BACK_A backend against $BACK_B"
    ok=0; total=0
    for f in "$REPO"/sample_kernels/*.py; do
        name=$(basename "$f" .py)
        [ -z "$SAMPLES" ] || [[ ",$SAMPLES," == *",$name,"* ]] || continue
        total=$((total + 1))
        a=$LOGS/$name.1-$BACK_A; b=$LOGS/$name.2-$BACK_B
        (cd "$REPO" && KDEBUG_BACKEND=$BACK_A timeout 120 "$PY" "$f" >"$a.out" 2>"$a.err"); rc_a=$?
        (cd "$REPO" && KDEBUG_BACKEND=$BACK_B timeout 120 "$PY" "$f" >"$b.out" 2>"$b.err"); rc_b=$?
        if [ $rc_a -ne 0 ] || [ $rc_b -ne 0 ]; then
            echo "  $name: FAIL (exit $BACK_A $rc_a, $BACK_B $rc_b)"; tail -5 "$a.err" "$b.err" | sed 's/^/    /'
        elif ! "$PY" "$REPO/scripts/compare_outputs.py" "$a.out" "$b.out"; then
            echo "  $name: DIFF"; diff "$a.out" "$b.out" | head -10 | sed 's/^/    /'
        else
            echo "  $name: same ($(tail -1 "$b.out" | cut -c1-60))"; ok=$((ok + 1))
        fi
    done
    [ $total -gt 0 ] || result "samples  FAIL (no sample matched '$SAMPLES')"
    [ $total -gt 0 ] && { [ $ok -eq $total ] && result "samples  ok ($ok/$total same on $BACK_A and $BACK_B)" \
                                              || result "samples  FAIL ($ok/$total same)"; }
fi

# ---- bench ----------------------------------------------------------------------------------------
BENCH_OUT=""
if want bench; then
    note "bench: benchmarks/bench_gpu.py $QUICK"
    (cd "$REPO" && timeout 300 "$PY" benchmarks/bench_gpu.py $QUICK --numba-python "$PY" \
        --json "$LOGS/bench_gpu.json") > "$LOGS/bench_gpu.log" 2>&1
    if [ $? -eq 0 ]; then
        result "bench    ok"
        BENCH_OUT=$(cat "$LOGS/bench_gpu.log")
    else
        tail -15 "$LOGS/bench_gpu.log" >&2
        result "bench    FAIL (log: $LOGS/bench_gpu.log)"
    fi
fi

note "done"
printf '%s\n' "${SUMMARY[@]}"
[ -n "$BENCH_OUT" ] && { echo; echo "$BENCH_OUT"; }
exit $FAILED
