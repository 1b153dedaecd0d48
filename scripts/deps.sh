# Sourced by scripts/example, scripts/test and .ci/run: installs the Debian packages a command
# needs when they are missing, and puts the CUDA toolkit's nvcc on PATH.
#
#   devmat_need PACKAGE...   installs the missing ones with apt-get: as root directly, through
#                            sudo when it needs no password; otherwise prints the exact
#                            apt-get line to run and exits 1. Nothing is installed when all
#                            are there. Off Debian/Ubuntu (no dpkg-query) it only notes that.
#   devmat_find_nvcc         nvcc from PATH, $CUDA_PATH, $CUDA_HOME or /usr/local/cuda/bin;
#                            exits 1 with a note when there is none.

devmat_need() {
  if ! command -v dpkg-query >/dev/null 2>&1; then
    echo "note: not a Debian/Ubuntu system; make sure these (or their equivalents) are installed: $*" >&2
    return 0
  fi
  local missing=() pkg
  for pkg in "$@"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  local install=(apt-get install -y --no-install-recommends "${missing[@]}")
  local sudo=()
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
      sudo=(sudo)
    else
      echo "These Debian packages are missing: ${missing[*]}. Install them with" >&2
      echo "" >&2
      echo "    sudo apt-get update && sudo ${install[*]}" >&2
      echo "" >&2
      echo "(or run this command as root), then run it again." >&2
      exit 1
    fi
  fi
  echo "Installing ${missing[*]} with apt-get" >&2
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive "${install[@]}" -qq >/dev/null
}

devmat_find_nvcc() {
  command -v nvcc >/dev/null 2>&1 && return 0
  local dir
  for dir in "${CUDA_PATH:-}" "${CUDA_HOME:-}" /usr/local/cuda; do
    if [ -n "$dir" ] && [ -x "$dir/bin/nvcc" ]; then
      export PATH="$dir/bin:$PATH"
      return 0
    fi
  done
  echo "nvcc was not found on PATH, in \$CUDA_PATH, \$CUDA_HOME or /usr/local/cuda/bin." >&2
  echo "Install the CUDA toolkit (https://developer.nvidia.com/cuda-downloads), or put its bin/ on PATH." >&2
  exit 1
}

#   devmat_need_nccl ROOT    NCCL for the multi-GPU component (devmat::dist): nothing to do when
#                            $DEVMAT_NCCL_DIR is set, the nvidia-nccl-cu13 wheel is importable
#                            or the system has nccl.h; otherwise installs the wheel's files into
#                            ROOT/.deps/nccl (pip --target: no system Python is touched) and
#                            exports DEVMAT_NCCL_DIR for CMake. DEVMAT_NO_NCCL=1 skips it (the
#                            component is then off). A failure only notes it: devmat builds without.
devmat_need_nccl() {
  local root=$1 dir
  [ -n "${DEVMAT_NO_NCCL:-}" ] && return 0
  [ -n "${DEVMAT_NCCL_DIR:-}" ] && return 0
  python3 -c "import nvidia.nccl" 2>/dev/null && return 0
  [ -f /usr/include/nccl.h ] && return 0
  dir=$root/.deps/nccl
  if [ ! -f "$dir/nvidia/nccl/include/nccl.h" ]; then
    command -v python3 >/dev/null 2>&1 && python3 -m pip --version >/dev/null 2>&1 || devmat_need python3-pip
    echo "Installing NCCL (the nvidia-nccl-cu13 wheel, about 300 MB) into $dir" >&2
    python3 -m pip install --quiet --no-deps --target "$dir" --break-system-packages nvidia-nccl-cu13 2>/dev/null ||
      python3 -m pip install --quiet --no-deps --target "$dir" nvidia-nccl-cu13 || {
        echo "note: NCCL could not be installed; the multi-GPU component (devmat::dist) will be off" >&2
        return 0
      }
  fi
  export DEVMAT_NCCL_DIR=$dir/nvidia/nccl
}
