#!/usr/bin/env bash
# One entry point for a fresh machine: creates what is missing (venv with the pinned ROS 2 Jazzy
# wheels and, where ../shared/ros2-cli-wheels exists, the ros2 command-line tools; the CMake path
# fix-up inside that venv; a colcon build), then runs a job in the workspace environment. A second
# run reuses everything and rebuilds only when the build's inputs changed. Set-up and build hold a
# lock, so two commands started at once (a second terminal) take turns instead of racing.
#
#   scripts/workspace.sh setup          # just set up / rebuild
#   scripts/workspace.sh test [args]    # lint + the pytest suite
#   scripts/workspace.sh demo [args]    # the closed-loop demo on the local platform
#   scripts/workspace.sh bench [args]   # every benchmark in bench/
#   scripts/workspace.sh run CMD...     # any command inside the workspace environment
#   scripts/workspace.sh scratch NAME   # the scratch venv .NAME-venv/ (requirements/scratch/NAME.txt)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/.venv"
WS="$ROOT/.ws"                       # colcon build/, install/, log/
PY_FOR_VENV="${PYTHON:-python3.11}"
command -v "$PY_FOR_VENV" >/dev/null 2>&1 || PY_FOR_VENV=python3

# The ros2 CLI wheels (requirements/ros2-cli.txt pins them): $ROS2_CLI_WHEELS, else a shared/
# folder beside the clone (CI) or beside the folder that holds it (a git worktree).
CLI_WHEELS="${ROS2_CLI_WHEELS:-}"
if [[ -z "$CLI_WHEELS" ]]; then
  for candidate in "$ROOT/../shared/ros2-cli-wheels" "$ROOT/../../shared/ros2-cli-wheels"; do
    if [[ -d "$candidate" ]]; then CLI_WHEELS="$(cd "$candidate" && pwd)"; break; fi
  done
fi

say() { printf '[workspace] %s\n' "$*" >&2; }

ensure_venv() {
  local stamp="$VENV/.requirements.sha256" want
  want="$( (cat "$ROOT"/requirements/*.txt; echo "cli wheels: ${CLI_WHEELS:+present}") | sha256sum | cut -d' ' -f1)"
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
  if [[ -n "$CLI_WHEELS" ]]; then
    say "installing the ros2 command-line tools from $CLI_WHEELS (pinned by requirements/ros2-cli.txt)"
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --no-index --no-deps \
      --require-hashes --find-links "$CLI_WHEELS" -r "$ROOT/requirements/ros2-cli.txt" >&2
  fi
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
  export PATH="$WS/install/sequence_ai_ros/bin:$VENV/bin:$PATH"  # sequence-ai, ros2, colcon
  export AMENT_PREFIX_PATH="$WS/install/sequence_ai_ros:$VENV"
  export CMAKE_PREFIX_PATH="$WS/install/sequence_ai_ros:$VENV"
  local site="$WS/install/sequence_ai_ros/lib/python3.11/site-packages"
  export PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}"
  export LD_LIBRARY_PATH="$WS/install/sequence_ai_ros/lib:$VENV/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export RMW_IMPLEMENTATION="${RMW_IMPLEMENTATION:-rmw_fastrtps_cpp}"
  # All DDS traffic stays on loopback, on a domain of this run's own.
  export ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST
  # (a block of DOMAIN_BLOCK consecutive ones for a parallel test run: scripts/ros_domains.py)
  if [[ -z "${ROS_DOMAIN_ID:-}" ]]; then
    ROS_DOMAIN_ID="$("$VENV/bin/python" -S "$ROOT/scripts/ros_domains.py" --block "${DOMAIN_BLOCK:-1}")"
    DOMAIN_PICKED=1
  fi
  export ROS_DOMAIN_ID
  # Raw camera frames need a larger shared-memory segment than Fast DDS's 512 KB (see the file).
  export FASTRTPS_DEFAULT_PROFILES_FILE="${FASTRTPS_DEFAULT_PROFILES_FILE:-$ROOT/config/fastdds_shm.xml}"
  export PYTHONDONTWRITEBYTECODE=1
}

# What a build depends on: the names of every file it installs (installed as symlinks, so an
# edit needs no rebuild, a new or removed file does), the contents of what it generates or
# compiles, and the venv's requirements.
build_inputs() {
  (
    cd "$ROOT"
    find CMakeLists.txt package.xml setup.py setup.cfg pyproject.toml msg srv action launch config scripts/bin sequence_ai \
      sequence_ai_ros -name __pycache__ -prune -o -print 2>/dev/null | LC_ALL=C sort
    cat CMakeLists.txt package.xml msg/* srv/* action/* sequence_ai/_vision/*.c 2>/dev/null
    cat "$VENV/.requirements.sha256" 2>/dev/null
  ) | sha256sum | cut -d' ' -f1
}

build() {
  ros_env
  local stamp="$WS/.build-inputs.sha256" want
  want="$(build_inputs)"
  if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" && -d "$WS/install/sequence_ai_ros" ]]; then
    return
  fi
  # Build against the venv only: an apt-installed ROS on the same machine must not leak in.
  local log="$WS/build.log"
  mkdir -p "$WS/src"
  # The venv lives inside the repository, which is also the package's source directory, and CMake
  # refuses exported include paths "prefixed in the source directory". Building through a symlink
  # gives the package a source path that does not contain the venv.
  ln -sfn "$ROOT" "$WS/src/sequence_ai_ros"
  say "colcon build (incremental)"
  rm -f "$stamp"
  if ! (cd "$WS" && colcon --log-base "$WS/log" build --symlink-install --paths "$WS/src/sequence_ai_ros" \
        --build-base "$WS/build" --install-base "$WS/install" \
        --event-handlers console_direct- console_cohesion- status- summary- \
        --cmake-args -DPython3_EXECUTABLE="$VENV/bin/python" -DPYTHON_EXECUTABLE="$VENV/bin/python" \
          -DBUILD_TESTING=OFF -Wno-dev >"$log" 2>&1); then
    tail -n 60 "$log" >&2
    say "colcon build failed; full log: $log"
    exit 1
  fi
  echo "$want" > "$stamp"
}

# Set up and build under a lock (a second command waits for the first one's build, then finds
# nothing to do), then enter the environment. The lock is not held by the job that follows.
prepare() {
  mkdir -p "$WS"
  (
    if command -v flock >/dev/null 2>&1; then
      flock 9 || true
    fi
    ensure_venv
    build
  ) 9>"$WS/.lock"
  ros_env
}

# The test suite: pytest-xdist workers (each with a ROS domain, temp dir and local platform of its
# own: test/conftest.py), the scratch venvs of requirements/scratch/ made in the background meanwhile
# (the 0.20.0 reference checks wait for theirs), and with `--load N`, N CPU-burning processes beside
# the run, ended with it however it ends.
TEST_WORKERS_DEFAULT=3
run_tests() {
  local load=0 workers="${SEQUENCE_AI_TEST_WORKERS:-$TEST_WORKERS_DEFAULT}" args=() arg
  while (($#)); do
    case "$1" in
      --load) load="${2:-}"; shift 2 || { say "--load needs a number of CPU-burning processes"; exit 2; } ;;
      --load=*) load="${1#--load=}"; shift ;;
      *) args+=("$1"); shift ;;
    esac
  done
  if [[ ! "$load" =~ ^[0-9]+$ ]]; then say "--load takes a number of CPU-burning processes, not '$load'"; exit 2; fi
  for arg in "${args[@]+"${args[@]}"}"; do  # the caller chose the workers (or none: -p no:xdist, -n 0)
    case "$arg" in -n|-n*|--numprocesses*|no:xdist) workers="" ;; esac
  done
  DOMAIN_BLOCK="${workers:-1}"
  prepare
  cd "$ROOT"
  mkdir -p "$WS/log"
  "$VENV/bin/python" "$ROOT/scripts/scratch_venv.py" --all >"$WS/log/scratch-venvs.log" 2>&1 &
  local scratch=$! burners=() pytest_pid=""
  export SEQUENCES_REFERENCE_PYTHON="${SEQUENCES_REFERENCE_PYTHON:-$(scratch_python bench)}"
  for ((i = 0; i < load; i++)); do
    # Burns a CPU until this script is gone, even if it is killed outright (its parent changes).
    "$VENV/bin/python" -S -c 'import os
parent = os.getppid()
while os.getppid() == parent:
    for _ in range(100000): pass' &
    burners+=($!)
  done
  # Every command here may find its process gone already (the scratch venvs made, pytest ended):
  # under `set -e` a failing kill in this trap would be the script's exit status, a green run's 1.
  end_run() {
    trap - EXIT INT TERM HUP
    if [[ -n "$pytest_pid" ]]; then kill -TERM "$pytest_pid" 2>/dev/null || true; fi
    kill "${burners[@]+"${burners[@]}"}" "$scratch" 2>/dev/null || true
    wait 2>/dev/null || true
  }
  trap 'end_run; exit 130' INT
  trap 'end_run; exit 143' TERM HUP
  trap end_run EXIT
  local beside=""
  ((load > 0)) && beside=", $load CPU-burning processes beside it"
  say "pytest${workers:+ on $workers workers}$beside (ruff runs as one of the tests;" \
      "ROS_DOMAIN_ID=$ROS_DOMAIN_ID${workers:+ and up, one per worker})"
  # pytest's console script, not `python -m pytest`: the latter puts the source tree first on
  # sys.path, where sequence_ai_ros lacks the generated interfaces of the install tree. In the
  # background and waited for, so a signal to this script runs its trap at once.
  "$VENV/bin/pytest" ${workers:+-n "$workers"} "${args[@]+"${args[@]}"}" &
  pytest_pid=$!
  local status=0
  wait "$pytest_pid" || status=$?
  pytest_pid=""
  exit "$status"
}

scratch_python() { echo "$ROOT/.$1-venv/bin/python"; }

cmd="${1:-setup}"
shift || true
case "$cmd" in
  setup)
    prepare
    say "ready: $WS/install"
    ;;
  test)
    run_tests "$@"
    ;;
  demo)
    prepare
    cd "$ROOT"
    exec "$VENV/bin/python" -P -m sequence_ai_ros.tools.demo "$@"
    ;;
  bench)
    prepare
    cd "$ROOT"
    exec "$VENV/bin/python" -P bench/run_all.py "$@"
    ;;
  scratch)
    [[ $# -ge 1 ]] || { say "usage: scripts/workspace.sh scratch NAME"; exit 2; }
    # stdlib only: any Python 3 runs it; the venv's own Python comes from the requirements file
    exec "${PY_FOR_VENV}" "$ROOT/scripts/scratch_venv.py" "$1"
    ;;
  run)
    prepare
    cd "$ROOT"
    # A domain picked for this command alone: nodes started elsewhere are seen only on the same one.
    if [[ -n "${DOMAIN_PICKED:-}" ]]; then
      say "ROS_DOMAIN_ID=$ROS_DOMAIN_ID (picked for this command; to see the same nodes from another terminal:" \
          "export ROS_DOMAIN_ID=$ROS_DOMAIN_ID there first)"
    fi
    if [[ "${1:-}" == ros2 && "${2:-}" == action && "${3:-}" == send_goal ]]; then
      exec "$VENV/bin/python" -S "$ROOT/scripts/server_hint.py" "$@"  # says so when no server answers
    fi
    exec "$@"
    ;;
  *)
    say "unknown command '$cmd' (setup | test | demo | bench | scratch NAME | run CMD...)"
    exit 2
    ;;
esac
