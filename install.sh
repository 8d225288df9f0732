#!/usr/bin/env bash
# Sets up .venv with cpt-sweep and its test tools. Where there is no CUDA the CPU build of
# torch goes in first, so that no dependency drags in a multi-GB CUDA build.
# TORCH_INDEX_URL overrides where that CPU torch comes from (e.g. the PyTorch CPU index).
set -euo pipefail
cd "$(dirname "$0")"

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
"${pip[@]}" -e ".[test]"
