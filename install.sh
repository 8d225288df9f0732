#!/usr/bin/env bash
# Sets up .venv with cpt-sweep. Where there is no CUDA the CPU build of torch goes in first, so
# that no dependency drags in a multi-GB CUDA build.
# TORCH_INDEX_URL overrides where that CPU torch comes from (e.g. the PyTorch CPU index).
# --test also installs the test tools, the eval extra (lm-evaluation-harness, which the downstream tests run) and, where it is missing, Debian's chromium (the report's
# browser test opens the page in it); that needs root and apt-get, so it is left out of a plain install.
set -euo pipefail
cd "$(dirname "$0")"

test_setup=false
case "${1:-}" in
    "") ;;
    --test) test_setup=true ;;
    *) echo "usage: $0 [--test]  (got $1)" >&2; exit 2 ;;
esac

python=${PYTHON:-python3.11}
[ -x .venv/bin/python ] || "$python" -m venv .venv
pip=(.venv/bin/python -m pip install --quiet --disable-pip-version-check)

if ! .venv/bin/python -c "import torch" 2>/dev/null; then
    if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
        "${pip[@]}" "torch>=2.4"
    else
        "${pip[@]}" "torch==2.13.0" ${TORCH_INDEX_URL:+--index-url "$TORCH_INDEX_URL"}
    fi
fi
# An editable install leaves the project's own modules uncompiled, and where PYTHONDONTWRITEBYTECODE is set
# nothing ever writes their bytecode: every process (the driver, each trial, each Ray Train worker) would compile
# them again, ~1 s of CPU each.
compile_project() { .venv/bin/python -m compileall -q cli sweep train_entry reports >/dev/null; }
if ! $test_setup; then
    "${pip[@]}" -e .
    compile_project
    exit 0
fi
"${pip[@]}" -e ".[test,eval]"  # eval: the downstream tests run lm-evaluation-harness
compile_project
if [ ! -x /usr/bin/chromium ] && ! command -v chromium >/dev/null 2>&1; then
    if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
    else
        echo "warning: chromium is missing and this is not root with apt-get; the report's browser test" \
            "will fail until it is installed (sudo apt-get install chromium)" >&2
    fi
fi
