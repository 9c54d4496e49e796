#!/usr/bin/env bash
# Build envcheck-test/paddle-cpu offline: Debian 12 rootfs from .deb files + Paddle CPU wheels,
# assembled on the host and `docker load`ed (no `docker build`, no base image to pull).
# Called by `scripts/dev setup`; see README.md beside this file.
#   build.sh TAG WORKDIR WHEELS_DIR DEBS_DIR PADDLE_VERSION LABEL=VALUE
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
tag="$1" work="$2" wheels="$3" debs="$4" paddle="$5" label="$6"
pip_python="${PYTHON:-python3}"  # any Python 3.11 with pip: only unpacks wheels into the rootfs
site=usr/local/lib/python3.11/dist-packages  # Debian's python3 looks here outside a venv

fetch_debs() {
  # apt-get download: the archive's current version of each, kept in the cache between builds.
  local missing=()
  while read -r pkg; do
    compgen -G "$debs/${pkg}_*.deb" >/dev/null || missing+=("$pkg")
  done < <(grep -v '^#' "$here/packages.txt")
  if [ "${#missing[@]}" -gt 0 ]; then
    # Sandbox user root: the cache dir is not readable by _apt, which only makes apt warn.
    # No package lists yet (a fresh machine whose packages were all installed): update once.
    (cd "$debs" && apt-get download -q -o APT::Sandbox::User=root "${missing[@]}" >/dev/null) || {
      apt-get update -qq
      (cd "$debs" && apt-get download -q -o APT::Sandbox::User=root "${missing[@]}" >/dev/null)
    }
  fi
}

make_rootfs() {
  local root="$work/root"
  # Newest cached .deb per package only: a package upgraded in the archive leaves an old file.
  while read -r pkg; do
    dpkg-deb -x "$(ls -v "$debs/${pkg}"_*.deb | tail -n1)" "$root"
  done < <(grep -v '^#' "$here/packages.txt")
  rm -rf "$root"/usr/share/{doc,man,info,locale,lintian}
  ln -sf python3 "$root/usr/bin/python"
  ln -sf dash "$root/bin/sh"  # dash's postinst would make this link
  mkdir -p "$root/tmp" "$root/root" "$root/home/paddle" "$root/etc"
  chmod 1777 "$root/tmp"
  printf 'root:x:0:0:root:/root:/bin/sh\npaddle:x:1000:1000:paddle:/home/paddle:/bin/sh\n' >"$root/etc/passwd"
  printf 'root:x:0:\npaddle:x:1000:\n' >"$root/etc/group"
  ldconfig -r "$root"  # /etc/ld.so.cache: libc6's trigger would have made it
}

install_paddle() {
  local root="$work/root"
  "$pip_python" -m pip install -q --no-index --no-compile --disable-pip-version-check \
    --find-links "$wheels" --target "$root/$site" "paddlepaddle==$paddle" setuptools
  # Bytecode made ahead (containers start fresh: no pyc cache survives). unchecked-hash because
  # the layer tars reset every mtime, which would make timestamp pycs stale; -s/-p so tracebacks
  # show in-image paths. Same 3.11 bytecode magic as the image's python3 (checked above).
  "$pip_python" -m compileall -q -j 0 --invalidation-mode unchecked-hash -s "$root" -p / \
    "$root/usr/lib/python3.11" "$root/$site" >/dev/null || true  # some test files never compile
}

split_layers() {
  # Three big layers instead of one: `docker push` gzips each layer on one core, so the pushes
  # run in parallel (≈16 s instead of ≈30 s), and pulls show several bars.
  local root="$work/root"
  mkdir -p "$work/paddle-libs/$site/paddle" "$work/paddle/$site" "$work/deps/$site"
  mv "$root/$site/paddle/libs" "$work/paddle-libs/$site/paddle/libs"
  mv "$root/$site/paddle" "$work/paddle/$site/paddle"
  mv "$root/$site"/* "$work/deps/$site/"
}

"$pip_python" -c 'import sys; assert sys.version_info[:2] == (3, 11), sys.version' \
  || { echo "build.sh: PYTHON must be a Python 3.11 (the image's)" >&2; exit 2; }
rm -rf "$work"; mkdir -p "$work/root" "$debs"
fetch_debs
make_rootfs
install_paddle
split_layers
python3 "$here/../mkimage.py" --tag "$tag" --label "$label" --scratch "$work" \
  --env LANG=C.UTF-8 --cmd '["python3"]' --chown /home/paddle=1000:1000 \
  --layer "$work/root" --layer "$work/deps" --layer "$work/paddle" --layer "$work/paddle-libs" \
  | docker load -q
rm -rf "$work"
