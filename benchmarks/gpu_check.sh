#!/usr/bin/env bash
# The GPU check: the gpu-marked tests, the full-run entry's per-set evaluation measured, a sweep of ~150M-parameter
# trials on the GPU at 1, 0.25 and 0.5 GPU per trial (and a tiny one's pick against the CPU's), the 1B proxy-trial
# benchmark and the full-run benchmark, on the machine's CUDA GPUs, ending with one summary line (tests passed, the
# evaluation's cost against a training iteration, entry / bare per-layer ratio, optimizer step, resume step check,
# the proxy trial's ratio to its bare loop and MFU, the sweeps' trials per hour and whether the pick matches the CPU's).
#
#   benchmarks/gpu_check.sh [LOG_DIR [PART ...]]   # from anywhere; LOG_DIR defaults to $OUT, else runs/gpu-check
#
# PART: tests, evaluation, sweep, pick, proxy, full-run (default all six, in that order). Each part is stopped at its
# limit (install and preflight 90 s, the tests 300 s, the evaluation 150 s, the sweeps 440 s, the pick check 240 s,
# the proxy-trial benchmark 300 s, the full-run benchmark 150 s) and what it measured is kept: each benchmark prints
# each row as it finishes. GPU_TESTS (test files, space-separated) narrows the tests part to those files; by default
# it runs every file with a gpu-marked test. Measured on one H100 the tests took 137 s and the proxy and full-run
# benchmarks together about 250 s; on an H200 the full-run tests 61 s, the evaluation 90 s and the sweeps at 1 and
# 0.25 GPU per trial 265 s with their caches: all parts take far over a 10-minute limit on one command, so run
# them in calls of a few parts each.
# Runs with .venv/bin/python when that sees a GPU, else with $PYTHON, else python3, which must have torch with
# CUDA. A machine with nothing else and no internet gets the other packages as wheels: run
# benchmarks/fetch_gpu_wheels.sh where there is internet (it fills .whl/ for that machine's Python), copy the
# checkout over, and this script installs .whl/*.whl (or $WHEELS/*.whl) into $HOME/gpu-site, keeping what is there.
# Wheels in folders below .whl/ are installed too, and a wheel split in parts (`split -b 30M X.whl X.whl.part-`, its
# parts in any folders below .whl/) is joined first: a lent GPU machine takes at most 64 MiB a call, work tree
# included, so the wheels come in calls of their own, each carrying its own folder (fetch_gpu_wheels.sh --lent
# sorts them so). A wheel whose parts have not all arrived is left out, and said so: only the sweep needs Ray, so the
# tests and the evaluation run in a call before Ray's wheel comes.
#
# Its own pytest options, not pyproject's: no pytest-xdist, so one GPU test runs at a time. Its preflight
# compiles one torch.compile'd function on the GPU, as megatron-core's fused kernels are; where that fails (no C
# compiler or Python headers for Triton) everything runs unfused (CPT_SWEEP_FUSIONS=off) and says so.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
log_dir=${1:-${OUT:-$root/runs/gpu-check}}
all_parts=(tests evaluation sweep pick proxy full-run)
parts=("${@:2}")
[ ${#parts[@]} -gt 0 ] || parts=("${all_parts[@]}")
for part in "${parts[@]}"; do
  if [[ ! " ${all_parts[*]} " =~ " $part " ]]; then
    echo "gpu_check: unknown part '$part'; the parts are: ${all_parts[*]}" >&2
    exit 2
  fi
done
runs() { [[ " ${parts[*]} " =~ " $1 " ]]; }
mkdir -p "$log_dir"
wheels=${WHEELS:-$root/.whl}

python=${PYTHON:-python3}
if [ -x .venv/bin/python ] && .venv/bin/python -c 'import torch, sys; sys.exit(not torch.cuda.is_available())' 2>/dev/null; then
  python=.venv/bin/python
fi
if [ -d "$wheels" ]; then
  mapfile -t parts_of < <(find "$wheels" -name '*.whl.part-aa' | sort)
  for first in "${parts_of[@]}"; do
    name=$(basename "${first%.part-aa}")
    mapfile -t pieces < <(find "$wheels" -name "$name.part-*" -printf '%f\t%p\n' | sort | cut -f2)
    cat "${pieces[@]}" > "$wheels/$name.joined"
    if "$python" -c 'import sys, zipfile; sys.exit(zipfile.ZipFile(sys.argv[1]).testzip() is not None)' \
        "$wheels/$name.joined" 2>/dev/null; then
      mv "$wheels/$name.joined" "$wheels/$name"
    else
      rm -f "$wheels/$name.joined"
      echo "gpu_check: $name: its ${#pieces[@]} part(s) under $wheels do not make a whole wheel yet; left out" >&2
    fi
  done
fi
mapfile -t wheel_files < <([ -d "$wheels" ] && find "$wheels" -type f -name '*.whl' | sort)
if [ ${#wheel_files[@]} -gt 0 ]; then
  if ! timeout 90 "$python" -m pip install -q --no-index --no-deps --no-compile --upgrade --target "$HOME/gpu-site" \
      "${wheel_files[@]}"; then
    echo "gpu_check: could not install the ${#wheel_files[@]} wheels under $wheels into $HOME/gpu-site with $python" >&2
    exit 2
  fi
  export PYTHONPATH="$HOME/gpu-site${PYTHONPATH:+:$PYTHONPATH}"
fi
export PYTHONPATH="$root${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1

# Preflight: torch with CUDA, the packages the tests import, and the fused kernels' compiler.
fusions=$(mktemp)  # not in LOG_DIR: a machine may send back only a few files from there
timeout 90 "$python" - "$fusions" "$( (runs sweep || runs pick) && echo ray)" <<'EOF' || exit 2
import importlib.util
import sys

try:
    import torch
except ImportError:
    sys.exit(f"gpu_check: {sys.executable} has no torch; set PYTHON to a Python that has torch with CUDA")
if not torch.cuda.is_available():
    sys.exit(f"gpu_check: the torch of {sys.executable} sees no CUDA GPU; run this on a GPU machine")
needed = ("megatron.core", "pydantic", "optuna", "transformers", "tokenizers", "yaml", "pytest", "wandb")
needed += ("sklearn", "zstandard", *filter(None, sys.argv[2:3]))  # Ray only for the sweeps: nothing else imports it
missing = [name for name in needed if importlib.util.find_spec(name) is None]
if missing:
    sys.exit(
        f"gpu_check: {sys.executable} lacks {', '.join(missing)}: fetch the wheels with "
        "benchmarks/fetch_gpu_wheels.sh where there is internet, into .whl/ (or $WHEELS)"
    )
from train_entry.megatron.fusions import compile_failure

failure = compile_failure(torch.device("cuda"))
with open(sys.argv[1], "w") as out:
    out.write("auto" if failure is None else "off")
print(f"gpu_check: {torch.cuda.get_device_name()}, torch {torch.__version__}, Python {sys.version.split()[0]}")
if failure is not None:
    print(f"gpu_check: WARNING torch.compile cannot build a kernel here ({failure}): running unfused", flush=True)
EOF
export CPT_SWEEP_FUSIONS=$(cat "$fusions")

status=0
if runs tests; then
  if [ -n "${GPU_TESTS:-}" ]; then
    read -ra files <<< "$GPU_TESTS"
  else
    mapfile -t files < <(grep -rl --include='test_*.py' 'mark.gpu' tests | sort)
  fi
  timeout 300 "$python" -m pytest "${files[@]}" -m gpu -o addopts="-ra --strict-markers" -p no:xdist \
    -p no:cacheprovider --continue-on-collection-errors -o junit_family=xunit1 --junitxml="$log_dir/gpu-tests.xml" 2>&1 \
    | tee "$log_dir/gpu-tests.log"
  [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
fi
if runs evaluation; then
  timeout 150 "$python" benchmarks/full_run_evaluation_gpu.py --json "$log_dir/evaluation.json" 2>&1 \
    | tee "$log_dir/evaluation.md"
  [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
fi
if runs sweep; then
  # Its own limit is inside: a sweep still running at 400 s is stopped as Ctrl-C stops it, and its row kept.
  timeout 440 "$python" benchmarks/gpu_sweep.py --only sweeps --time-limit 400 --json "$log_dir/gpu-sweep.json" 2>&1 \
    | tee "$log_dir/gpu-sweep.md"
  [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
fi
if runs pick; then
  timeout 240 "$python" benchmarks/gpu_sweep.py --only pick --pick-time-limit 210 --json "$log_dir/gpu-pick.json" \
    2>&1 | tee "$log_dir/gpu-pick.md"
  [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
fi
if runs proxy; then
  timeout 300 "$python" benchmarks/proxy_trial_gpu.py --json "$log_dir/proxy-trial-benchmark.json" 2>&1 \
    | tee "$log_dir/proxy-trial-benchmark.md"
  [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
fi
if runs full-run; then
  timeout 150 "$python" benchmarks/full_run_gpu.py --json "$log_dir/full-run-benchmark.json" 2>&1 \
    | tee "$log_dir/full-run-benchmark.md"
  [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
fi
"$python" benchmarks/gpu_check_summary.py "$log_dir" "${parts[@]}" | tee "$log_dir/summary.txt"
exit $status
