#!/usr/bin/env bash
# Every gpu-marked test and the full-run GPU benchmark, in one command, on one CUDA GPU.
#
#   benchmarks/gpu_check.sh [LOG_DIR]        # from anywhere; LOG_DIR defaults to $OUT, else runs/gpu-check
#
# Budget: under 8 minutes on one H100 or H200; each part is stopped at its limit (the entry's tests
# at 210 s, the calibration test at 90 s, the benchmark at 150 s). Runs with .venv/bin/python when
# that sees a GPU, else with python3 (or $PYTHON), which must have torch with CUDA. A machine
# without this project's other packages and without internet (e.g. Python 3.12 with torch and
# triton preinstalled) gets them as wheels downloaded where there is internet, into .whl/ in the
# project root, without torch:
#   pip download --no-deps --only-binary=:all: --python-version 3.12 --platform manylinux2014_x86_64 \
#       -d .whl megatron-core==0.16.1 pydantic pydantic-core optuna sqlalchemy wandb ...   (and their dependencies)
# then copy the checkout, .whl included, over; this script installs .whl/*.whl into $HOME/gpu-site.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
log_dir=${1:-${OUT:-$root/runs/gpu-check}}
mkdir -p "$log_dir"

python=${PYTHON:-python3}
if [ -x .venv/bin/python ] && .venv/bin/python -c 'import torch, sys; sys.exit(not torch.cuda.is_available())'; then
  python=.venv/bin/python
fi
if [ -d .whl ] && compgen -G ".whl/*.whl" >/dev/null; then
  "$python" -m pip install -q --no-index --no-deps --no-compile --upgrade --target "$HOME/gpu-site" .whl/*.whl
  export PYTHONPATH="$HOME/gpu-site${PYTHONPATH:+:$PYTHONPATH}"
fi
export PYTHONPATH="$root${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONUNBUFFERED=1
"$python" - <<'EOF'
try:
    import torch
except ImportError:
    raise SystemExit("gpu_check: this Python has no torch; set PYTHON to one that has torch with CUDA") from None
if not torch.cuda.is_available():
    raise SystemExit("gpu_check: this Python's torch sees no CUDA GPU")
print(f"gpu_check: {torch.cuda.get_device_name()}, torch {torch.__version__}")
EOF

# Only the test files with gpu-marked tests (the others import what a GPU node may lack: Ray, Playwright),
# one pytest per test package, so that a package whose imports fail there does not stop the others.
status=0
: >"$log_dir/gpu-tests.log"
for part in tests/train_entry:210 tests/sweep:90; do
  mapfile -t files < <(grep -rl --include='test_*.py' 'mark.gpu' "${part%:*}" | sort)
  [ ${#files[@]} -gt 0 ] || continue
  timeout "${part#*:}" "$python" -m pytest -m gpu -p no:cacheprovider -q -ra "${files[@]}" 2>&1 \
    | tee -a "$log_dir/gpu-tests.log" || status=1
done
timeout 150 "$python" benchmarks/full_run_gpu.py 2>&1 | tee "$log_dir/full-run-benchmark.md" || status=1
exit $status
