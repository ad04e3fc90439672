# shellcheck shell=bash
# Sourced by scripts/run.sh and scripts/test.sh (not meant to be run directly).
#
# ebt_configure BUILD_DIR BUILD_TYPE: the one cmake configure both scripts run.
#
# Makes sure the Debian packages ebt needs are installed:
#   cmake g++ make pkg-config libboost-dev doctest-dev libpugixml-dev graphviz
#   libcpp-httplib-dev nlohmann-json3-dev (the live inspector's HTTP server and JSON)
#   libtbb-dev (oneTBB: the World's parallel stepping, World::set_threads)
#   (graphviz: the tests check that the tree views' DOT output renders; scripts/views.sh)
#   + libbenchmark-dev when bench/CMakeLists.txt exists
# Missing packages are installed with apt-get when running as root; otherwise
# the exact command to run is printed and the calling script exits 1.

ebt_log() { printf '[ebt] %s\n' "$*" >&2; }

# Repository root (this file lives in <root>/scripts).
EBT_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

ebt_required_packages() {
  local pkgs=(cmake g++ make pkg-config libboost-dev doctest-dev libpugixml-dev graphviz
    libcpp-httplib-dev nlohmann-json3-dev libtbb-dev)
  if [[ -f "$EBT_ROOT/bench/CMakeLists.txt" ]]; then
    pkgs+=(libbenchmark-dev)
  fi
  printf '%s\n' "${pkgs[@]}"
}

ebt_package_installed() {
  dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"
}

# ebt_ensure_packages PKG...: install whichever of PKG... are missing.
ebt_ensure_packages() {
  local missing=() pkg
  if ! command -v dpkg-query >/dev/null 2>&1; then
    ebt_log "not a Debian-based system: make sure these are installed: $*"
    return 0
  fi
  for pkg in "$@"; do
    ebt_package_installed "$pkg" || missing+=("$pkg")
  done
  if ((${#missing[@]} == 0)); then
    ebt_log "packages OK: $*"
    return 0
  fi

  if [[ "$(id -u)" -ne 0 ]]; then
    ebt_log "missing Debian packages: ${missing[*]}"
    ebt_log "install them with:"
    printf '  sudo apt-get update && sudo apt-get install -y --no-install-recommends %s\n' \
      "${missing[*]}" >&2
    exit 1
  fi

  ebt_log "installing missing packages: ${missing[*]}"
  local attempt
  for attempt in 1 2 3; do
    if apt-get update -q >&2 &&
       DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
         "${missing[@]}" >&2; then
      break
    fi
    if ((attempt == 3)); then
      ebt_log "apt-get failed to install: ${missing[*]}"
      exit 1
    fi
    ebt_log "apt-get failed (attempt $attempt), retrying in 10s"
    sleep 10
  done

  for pkg in "${missing[@]}"; do
    if ! ebt_package_installed "$pkg"; then
      ebt_log "package $pkg is still not installed"
      exit 1
    fi
  done
  ebt_log "installed: ${missing[*]}"
}

ebt_ensure_deps() {
  local pkgs
  mapfile -t pkgs < <(ebt_required_packages)
  ebt_ensure_packages "${pkgs[@]}"
}

# The browser tests' packages (CTest label browser, tests/browser/): headless chromium, its driver, and
# selenium for Debian's /usr/bin/python3. Building and the other tests do not need them, and
# scripts/test.sh does not install them: without them the browser tests are skipped (with a message).
# CI installs them (.ci/run) and sets EBT_REQUIRE_BROWSER=1, so that there they must run.
ebt_browser_packages() {
  printf '%s\n' chromium chromium-driver python3-selenium
}

ebt_ensure_browser_deps() {
  local pkgs
  mapfile -t pkgs < <(ebt_browser_packages)
  ebt_ensure_packages "${pkgs[@]}"
}

ebt_jobs() { nproc 2>/dev/null || echo 2; }

# ebt_configure BUILD_DIR BUILD_TYPE: configures BUILD_DIR with every ebt option
# set explicitly (the baseline below, then EBT_CMAKE_ARGS, whitespace-separated),
# so that a build directory never keeps options from an earlier run and
# scripts/run.sh and scripts/test.sh can share build/release.
ebt_configure() {
  local build_dir="$1" build_type="$2" extra_cmake_args
  read -r -a extra_cmake_args <<<"${EBT_CMAKE_ARGS:-}"
  ebt_log "configuring $build_dir ($build_type) ${EBT_CMAKE_ARGS:-}"
  cmake -S "$EBT_ROOT" -B "$build_dir" \
    -DCMAKE_BUILD_TYPE="$build_type" \
    -DEBT_BUILD_TESTS=ON \
    -DEBT_BUILD_SAMPLES=ON \
    -DEBT_BUILD_BENCH=ON \
    -DEBT_WARNINGS_AS_ERRORS=OFF \
    -DEBT_SANITIZE= \
    -DEBT_LARGE_TESTS=OFF \
    -DEBT_XML=ON \
    "${extra_cmake_args[@]}"
}
