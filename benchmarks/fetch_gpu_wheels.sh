#!/usr/bin/env bash
# Wheels for benchmarks/gpu_check.sh on a GPU machine without internet that has Python and torch with CUDA
# (torch's own wheel brings filelock, fsspec, jinja2, networkx, setuptools, sympy, triton, typing-extensions):
# every other package the gpu tests, the benchmarks and the GPU sweep import, at the versions pinned in
# benchmarks/gpu-check-requirements.txt, as binary wheels for that machine's Python on x86-64 Linux
# (manylinux_2_17, also spelled manylinux2014, and manylinux_2_28), downloaded without resolving dependencies
# (the list is complete, and resolving would pull a torch).
#
#   benchmarks/fetch_gpu_wheels.sh [PYTHON_VERSION]     # where there is internet; default 3.12; fills .whl/
#
# Then copy the checkout, .whl/ included (git ignores it), to the GPU machine and run benchmarks/gpu_check.sh
# there: it installs .whl/*.whl into $HOME/gpu-site. 85 wheels, 288 MB for Python 3.12 (2026-11-28); ray, pyarrow,
# scipy, wandb and numpy are most of it.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
version=${1:-3.12}
python=${PYTHON:-python3}
dest="$root/.whl"
mkdir -p "$dest"
rm -f "$dest"/*.whl  # one version of each package: two would stop the install
"$python" -m pip download --no-deps --only-binary=:all: --python-version "$version" --implementation cp \
  --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 --platform manylinux_2_28_x86_64 \
  -d "$dest" -r "$root/benchmarks/gpu-check-requirements.txt"
echo "fetch_gpu_wheels: $(find "$dest" -name '*.whl' | wc -l) wheels for Python $version in $dest ($(du -sh "$dest" | cut -f1))"
