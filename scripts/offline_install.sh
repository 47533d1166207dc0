#!/usr/bin/env bash
# install.sh of an hptriage air-gapped archive (scripts/offline_bundle.py puts this file in it).
#
#   tar xzf hptriage-offline-*.tar.gz
#   hptriage-offline-*/install.sh PREFIX        # makes PREFIX/bin/hptriage
#
# Nothing is fetched: the archive's sums are checked first, then a virtual environment is made at
# PREFIX with the given Python's venv module (no ensurepip: pip comes from the archive's own pip
# wheel) and the archive's wheels are installed with pip --no-index, any pip configuration and PIP_*
# variable set aside. Needs bash, coreutils (sha256sum) and the CPython X.Y the archive was built for
# (PYTHON=/path/to/python3.X chooses it; else python3.X, then python3, from PATH).
# Exit status: 0 installed; 1 a check failed (one line says what is missing); 2 usage.
set -euo pipefail

say() { printf 'install.sh: %s\n' "$*" >&2; }
die() {
  say "$*"
  exit 1
}
usage() {
  cat >&2 <<'EOF'
usage: install.sh PREFIX
  Installs hptriage from this archive into a new virtual environment at PREFIX (PREFIX/bin/hptriage),
  with no network and no package index. PYTHON=/path/to/python3.X chooses the interpreter.
EOF
  exit 2
}

case "${1:-}" in
  -h | --help) usage ;;
  "" | -*) usage ;;
esac
[ $# -eq 1 ] || usage
prefix=$1

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)

# 1. The sums: every file of the archive as built, and nothing else among the wheels.
command -v sha256sum >/dev/null 2>&1 || die "sha256sum is missing (GNU coreutils): cannot check the archive"
[ -f "$here/SHA256SUMS" ] || die "$here/SHA256SUMS is missing: not a complete hptriage archive"
if ! (cd "$here" && sha256sum --check --strict --quiet SHA256SUMS >/dev/null 2>&1); then
  bad=$(cd "$here" && sha256sum --check --strict --quiet SHA256SUMS 2>&1 | grep -v '^sha256sum: WARNING' |
    head -n 3 | tr '\n' ';' || true)
  die "the archive's files do not match SHA256SUMS (${bad%;}): copy the archive again"
fi
listed=$(sed -n 's/^[0-9a-f]\{64\}  wheels\///p' "$here/SHA256SUMS" | LC_ALL=C sort)
present=$(cd "$here/wheels" && find . -mindepth 1 -maxdepth 1 -printf '%P\n' | LC_ALL=C sort)
if [ "$listed" != "$present" ]; then
  extra=$(LC_ALL=C comm -13 <(printf '%s\n' "$listed") <(printf '%s\n' "$present") | head -n 3 | tr '\n' ' ' || true)
  die "wheels/ holds files SHA256SUMS does not list (${extra% }): remove them or copy the archive again"
fi

# 2. What the archive was built for (bundle.env: key=value lines, read as data).
want_py="" want_arch="" want_glibc="" version="" extras="" platform=""
while IFS='=' read -r key value; do
  case $key in
    python) want_py=$value ;;
    arch) want_arch=$value ;;
    glibc) want_glibc=$value ;;
    version) version=$value ;;
    extras) extras=$value ;;
    platform) platform=$value ;;
  esac
done <"$here/bundle.env"
[ -n "$want_py" ] && [ -n "$want_arch" ] && [ -n "$version" ] || die "$here/bundle.env is incomplete"

# 3. This machine.
[ "$(uname -s)" = Linux ] || die "this archive is for Linux ($platform); this machine runs $(uname -s)"
arch=$(uname -m)
[ "$arch" = "$want_arch" ] ||
  die "this archive holds $want_arch wheels ($platform); this machine is $arch: build the archive with --platform manylinux2014_$arch"

py=${PYTHON:-}
if [ -z "$py" ]; then
  for candidate in "python$want_py" python3; do
    if command -v "$candidate" >/dev/null 2>&1; then
      py=$(command -v "$candidate")
      break
    fi
  done
fi
[ -n "$py" ] || die "no python$want_py or python3 on PATH: install CPython $want_py (with its venv module) or give it as PYTHON=/path/to/python$want_py"
[ -x "$py" ] || py=$(command -v "$py" 2>/dev/null) || die "PYTHON=${PYTHON:-} is not an executable"

# One probe: version, implementation, C library, and whether the venv module is there.
probe='import sys, platform, importlib.util as u
libc, libc_version = platform.libc_ver()
print("%d.%d" % sys.version_info[:2], platform.python_implementation(), libc or "unknown",
      libc_version or "0", "yes" if u.find_spec("venv") else "no")'
answer=$("$py" -I -c "$probe" 2>/dev/null) || die "$py does not run as a Python 3 interpreter"
read -r have_py impl libc libc_version has_venv <<<"$answer"
[ "$impl" = CPython ] || die "$py is $impl; the archive's wheels are for CPython $want_py"
if [ "$have_py" != "$want_py" ]; then
  die "$py is Python $have_py; this archive's wheels are for CPython $want_py: install python$want_py and give it as PYTHON=/path/to/python$want_py, or carry the archive built with --python $have_py (hptriage needs 3.10 or newer)"
fi
[ "$libc" = glibc ] || die "$py is linked against $libc, not glibc; the archive's manylinux wheels need glibc $want_glibc or newer"
if [ -n "$want_glibc" ] && [ "$(printf '%s\n%s\n' "$want_glibc" "$libc_version" | sort -V | head -n 1)" != "$want_glibc" ]; then
  die "this machine has glibc $libc_version; the archive's wheels need glibc $want_glibc or newer ($platform)"
fi
if [ "$has_venv" != yes ]; then
  die "$py has no venv module: install it (Debian/Ubuntu: apt-get install python$want_py-venv; RHEL/Amazon Linux: dnf install python$want_py) and run install.sh again"
fi

# 4. The prefix: a new or empty folder, or an earlier install of this script (replaced).
marker=.hptriage-offline
if [ -e "$prefix" ] && [ ! -d "$prefix" ]; then
  die "$prefix exists and is not a folder"
fi
clear=()
if [ -d "$prefix" ] && [ -n "$(ls -A "$prefix")" ]; then
  [ -f "$prefix/$marker" ] || die "$prefix exists and is not empty: give a new folder (or one an earlier install.sh made)"
  clear=(--clear)
fi

# 5. The environment and the install: no index, no configuration, no PIP_* variable, no cache.
pip_wheel=$(find "$here/wheels" -maxdepth 1 -name 'pip-*-py3-none-any.whl' | head -n 1)
[ -n "$pip_wheel" ] || die "the archive holds no pip wheel"
requirement="hptriage==$version"
[ -z "$extras" ] || requirement="hptriage[$extras]==$version"

clean_env=(env -i "PATH=$PATH" "HOME=${HOME:-/}" "TMPDIR=${TMPDIR:-/tmp}" "LC_ALL=C.UTF-8"
  PIP_CONFIG_FILE=/dev/null PIP_NO_INDEX=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PYTHONNOUSERSITE=1)
"${clean_env[@]}" "$py" -I -m venv --without-pip "${clear[@]}" "$prefix" ||
  die "$py -m venv could not make $prefix"
prefix=$(cd "$prefix" && pwd -P)
"${clean_env[@]}" "$prefix/bin/python" "$pip_wheel/pip" install --isolated --no-index \
  --find-links "$here/wheels" --only-binary=:all: --no-cache-dir --no-input --quiet \
  pip "$requirement" || die "pip could not install $requirement from $here/wheels (see its message above)"
printf 'installed from %s\n' "$(basename "$here")" >"$prefix/$marker"

installed=$("$prefix/bin/hptriage" --version) || die "$prefix/bin/hptriage does not run"
say "$installed: $prefix/bin/hptriage (add $prefix/bin to PATH)"
if ! "$prefix/bin/python" -I -c 'import contextlib, io
with contextlib.redirect_stdout(io.StringIO()):
    import weasyprint' >/dev/null 2>&1; then
  say "the PDF report (--pdf) needs Pango, which is not installed here (Debian/Ubuntu: apt-get install libpango-1.0-0 libpangoft2-1.0-0; RHEL/Amazon Linux: dnf install pango); every other report works"
fi
