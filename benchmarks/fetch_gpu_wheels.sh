#!/usr/bin/env bash
# Wheels for benchmarks/gpu_check.sh on a GPU machine without internet that has Python and torch with CUDA
# (torch's own wheel brings filelock, fsspec, jinja2, networkx, setuptools, sympy, triton, typing-extensions):
# every other package the gpu tests, the benchmarks and the GPU sweep import, at the versions pinned in
# benchmarks/gpu-check-requirements.txt, as binary wheels for that machine's Python on x86-64 Linux
# (manylinux_2_17, also spelled manylinux2014, and manylinux_2_28), downloaded without resolving dependencies
# (the list is complete, and resolving would pull a torch).
#
#   benchmarks/fetch_gpu_wheels.sh [--only NAMES_FILE] [PYTHON_VERSION]   # where there is internet; default 3.12
#
# --only: just the packages NAMES_FILE names (one a line, # comments), for a machine that has the rest, e.g.
# benchmarks/gpu-lent-lacks.txt. Ray's wheel goes to .whl/ray/ without ray/jars/ (the 31 MB jar of Ray's Java
# workers, of its 77 MB: cpt-sweep starts Python workers only) and the dashboard's web pages (3 MB: the sweep's Ray
# starts no dashboard), every other wheel to .whl/rest/: a machine that takes
# the work tree and its wheels in copies of at most 64 MiB gets them in two calls, one folder each
# (benchmarks/gpu_check.sh installs the wheels of every folder below .whl/ that have come).
# Then copy the checkout, .whl/ included (git ignores it), to the GPU machine and run benchmarks/gpu_check.sh
# there: it installs them into $HOME/gpu-site. 85 wheels, ~250 MB for Python 3.12 (2026-11-28); 34 and ~80 MB with
# --only benchmarks/gpu-lent-lacks.txt.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
only=
if [ "${1:-}" = --only ]; then
  only=${2:?usage: fetch_gpu_wheels.sh [--only NAMES_FILE] [PYTHON_VERSION]}
  shift 2
fi
version=${1:-3.12}
python=${PYTHON:-python3}
dest="$root/.whl"
rm -rf "$dest/rest" "$dest/ray"  # one version of each package: two would stop the install
mkdir -p "$dest/rest" "$dest/ray"
requirements=$(mktemp)
if [ -n "$only" ]; then
  grep -v '^#' "$only" | grep . | sed 's/$/==/' | grep -F -i -f - "$root/benchmarks/gpu-check-requirements.txt" \
    > "$requirements"
else
  grep -v '^#' "$root/benchmarks/gpu-check-requirements.txt" > "$requirements"
fi
"$python" -m pip download -q --no-deps --only-binary=:all: --python-version "$version" --implementation cp \
  --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 --platform manylinux_2_28_x86_64 \
  -d "$dest/rest" -r "$requirements"
rm -f "$requirements"
for wheel in "$dest"/rest/ray-*.whl; do
  [ -e "$wheel" ] || continue
  "$python" - "$wheel" "$dest/ray/$(basename "$wheel")" <<'PY'
import sys, zipfile
source, target = sys.argv[1:]
DROPPED = ("ray/jars/", "ray/dashboard/client/build/")  # Java workers' jar; the dashboard's web pages
with zipfile.ZipFile(source) as wheel, zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as slim:
    for item in wheel.infolist():
        if item.filename.startswith(DROPPED):
            continue
        data = wheel.read(item)
        if item.filename.endswith(".dist-info/RECORD"):
            data = b"".join(line for line in data.splitlines(True) if not line.startswith(tuple(map(str.encode, DROPPED))))
        slim.writestr(item, data)
PY
  rm "$wheel"
done
echo "fetch_gpu_wheels: $(find "$dest" -type f -name '*.whl' | wc -l) wheels for Python $version:" \
  "$(du -sh "$dest/rest" | cut -f1) in $dest/rest, $(du -sh "$dest/ray" | cut -f1) in $dest/ray"
