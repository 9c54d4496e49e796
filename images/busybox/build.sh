#!/usr/bin/env bash
# Build the tiny test images FROM scratch with Debian's static busybox, offline, and `docker load`
# them. Called by `scripts/dev setup`; see README.md beside this file.
#   build.sh WORKDIR LABEL=VALUE
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
work="$1"; label="$2"
busybox=/bin/busybox  # from the busybox-static package: no shared libraries to copy

rm -rf "$work"; mkdir -p "$work/base/bin" "$work/base/etc" "$work/base/tmp"
cp "$busybox" "$work/base/bin/busybox"
# One symlink per applet, as `busybox --install -s` would do inside the image.
for applet in $("$busybox" --list); do
  [ "$applet" = busybox ] || ln -sf busybox "$work/base/bin/$applet"
done
chmod 1777 "$work/base/tmp"
printf 'root:x:0:0:root:/root:/bin/sh\nuser:x:1000:1000:user:/tmp:/bin/sh\n' >"$work/base/etc/passwd"
printf 'root:x:0:\nuser:x:1000:\n' >"$work/base/etc/group"

# Incompressible, seeded (so reproducible) filler layers: pulls of `:layers` show real
# per-layer download/extract progress even on loopback.
for i in 1 2 3; do
  mkdir -p "$work/fill$i/fill"
  python3 -c "import random,sys; random.seed($i); sys.stdout.buffer.write(random.randbytes(4<<20))" \
    >"$work/fill$i/fill/blob$i"
done

mk() { python3 "$here/../mkimage.py" --label "$label" --cmd '["sh"]' --scratch "$work" "$@" | docker load -q; }
mk --tag envcheck-test/busybox:1 --layer "$work/base"
mk --tag envcheck-test/busybox:layers --layer "$work/base" \
   --layer "$work/fill1" --layer "$work/fill2" --layer "$work/fill3"
# Looks like an NVIDIA CUDA image to the pre-pull checks (same env keys as nvidia/cuda images).
mk --tag envcheck-test/busybox:cuda12.9 --layer "$work/base" \
   --env CUDA_VERSION=12.9.1 \
   --env "NVIDIA_REQUIRE_CUDA=cuda>=12.9 brand=tesla,driver>=535,driver<536"
rm -rf "$work"
