#!/usr/bin/env bash
# make image: one OCI image for the agent, the controller and the benchmarks, written as an OCI
# archive (build/image/tocsin.oci.tar), from Debian's own packages, offline but for the Debian
# mirror, without a Docker engine:
#   1. the Debian packages that hold the libraries the release binary and its modules link (ldd)
#      or dlopen (libcurl: src/k8s/curl_api.cc; libfabric: src/bench/transport_fabric.cc; the
#      modules tocsin-https.so: cpp-httplib and OpenSSL; tocsin-podresources.so: gRPC), at the versions
#      installed here, which the binary was built against;
#   2. mmdebstrap --variant=extract unpacks them (no maintainer scripts, so no shell is needed),
#      cached in $TOCSIN_CACHE/image by the package list;
#   3. what a library image does not need is removed: every program (no shell, no package
#      manager, no setuid tools), docs, locales, glibc's charset converters;
#   4. the binary, its modules in /usr/local/lib/tocsin/, an /etc/passwd with the non-root user 65532 (tocsin), and /tmp;
#   5. umoci makes the OCI image (entrypoint tocsin, user 65532:65532) and tar the archive.
# Usage: tools/image/build.sh [BINARY] [OUT_DIR] [TAG]
set -euo pipefail
cd "$(dirname "$0")/../.."
BINARY=${1:-build/release/tocsin}
OUT=${2:-build/image}
TAG=${3:-$("$BINARY" --version | awk '{print $NF}')}
CACHE=${TOCSIN_CACHE:-/var/cache/tocsin}/image
SUITE=bookworm

# tocsin's own modules (sys/module.h), beside the binary in a build tree; installed in
# /usr/local/lib/tocsin/, where /usr/local/bin/tocsin looks for them.
MODULES=("$(dirname "$BINARY")/tocsin-https.so" "$(dirname "$BINARY")/tocsin-podresources.so")
[ -x "$BINARY" ] || { echo "image: no binary at $BINARY (make build)" >&2; exit 2; }
for m in "${MODULES[@]}"; do
  [ -f "$m" ] || { echo "image: no module at $m (make build)" >&2; exit 2; }
done
for tool in mmdebstrap umoci dpkg-query; do
  command -v "$tool" >/dev/null || { echo "image: needs $tool (tools/image/deps.sh)" >&2; exit 2; }
done

# 1. Packages, pinned to the versions installed here (while the mirror has them).
libs=$(ldd "$BINARY" "${MODULES[@]}" | awk '/=> \//{print $3}')
# The first match only, with awk reading to the end: an awk that exits early makes ldconfig die
# of SIGPIPE now and then, which pipefail and `set -e` turn into a silent exit of this script.
libs+=$'\n'$(ldconfig -p | awk '/libcurl\.so\.4 .*x86-64/ && !n++ {print $NF}')
libs+=$'\n'$(ldconfig -p | awk '/libfabric\.so\.1 .*x86-64/ && !n++ {print $NF}')
packages=()
while read -r lib; do
  [ -n "$lib" ] || continue
  real=$(readlink -f "$lib")
  owner=$(dpkg -S "$real" 2>/dev/null || dpkg -S "$lib" 2>/dev/null || true)
  [ -n "$owner" ] || { echo "image: no Debian package holds $lib" >&2; exit 2; }
  pkg=${owner%%:*}
  version=$(dpkg-query -W -f '${Version}' "$pkg")
  # The installed version, while the mirror still has it; a security update in the same suite
  # can supersede it (same ABI): then the suite's own.
  if apt-cache madison "$pkg" 2>/dev/null | awk -F'|' '{gsub(/ /, "", $2); print $2}' |
      grep -qxF -- "$version"; then
    packages+=("$pkg=$version")
  else
    echo "image: $pkg $version is no longer on the mirror: the suite's version instead" >&2
    packages+=("$pkg")
  fi
done <<< "$libs"
mapfile -t packages < <(printf '%s\n' "${packages[@]}" | sort -u)
key=$(printf '%s\n' "$SUITE" "${packages[@]}" | sha256sum | cut -c1-16)
rootfs_tar=$CACHE/rootfs-$key.tar

# 2. The rootfs, once per package list.
if [ ! -f "$rootfs_tar" ]; then
  mkdir -p "$CACHE"
  echo "image: mmdebstrap ${#packages[@]} packages: ${packages[*]}"
  tmp=$(mktemp -d "$CACHE/rootfs-XXXXXX")
  trap 'rm -rf "$tmp"' EXIT
  mmdebstrap --quiet --variant=extract --include="$(IFS=,; echo "${packages[*]}")" \
    --dpkgopt='path-exclude=/usr/share/*' "$SUITE" "$tmp/rootfs.tar"
  mv "$tmp/rootfs.tar" "$rootfs_tar"
  rm -rf "$tmp"
  trap - EXIT
fi

# 3-4. The image's filesystem.
work=$(mktemp -d "${TMPDIR:-/tmp}/tocsin-image-XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/rootfs"
tar -C "$work/rootfs" -xf "$rootfs_tar"
r=$work/rootfs
rm -rf "$r"/usr/bin "$r"/usr/sbin "$r"/usr/games "$r"/usr/libexec "$r"/usr/share \
  "$r"/usr/lib/x86_64-linux-gnu/gconv "$r"/var/cache "$r"/var/log "$r"/etc/apt \
  "$r"/usr/lib/apt "$r"/usr/lib/dpkg "$r"/var/lib/apt "$r"/dev/*
# Merged /usr: /bin, /sbin, /lib, /lib64 are links into /usr; drop /bin and /sbin (no programs).
for d in bin sbin; do rm -rf "${r:?}/$d"; done
find "$r" -xdev \( -perm -4000 -o -perm -2000 \) -type f -delete
# Any other program (a maintainer's script such as pam's namespace.init) goes too; what the runtime
# bind-mounts over (/etc/hostname, /etc/resolv.conf) is plain data.
find "$r" -xdev -type f -perm /111 ! -name '*.so' ! -name '*.so.*' ! -name 'ld-linux*' -delete
for f in etc/hostname etc/resolv.conf; do [ ! -f "$r/$f" ] || chmod 0644 "$r/$f"; done
mkdir -p "$r/usr/local/bin" "$r/tmp" "$r/etc" "$r/proc"
chmod 1777 "$r/tmp"
install -m 0755 "$BINARY" "$r/usr/local/bin/tocsin"
install -d "$r/usr/local/lib/tocsin"
install -m 0644 "${MODULES[@]}" "$r/usr/local/lib/tocsin/"
printf 'root:x:0:0:root:/root:/nonexistent\ntocsin:x:65532:65532:tocsin:/nonexistent:/nonexistent\n' > "$r/etc/passwd"
printf 'root:x:0:\ntocsin:x:65532:\n' > "$r/etc/group"
printf '%s\n' "${packages[@]}" > "$r/etc/tocsin-image-packages"

# 5. The OCI image and its archive.
layout=$work/layout
umoci init --layout "$layout"
umoci new --image "$layout:$TAG"
umoci unpack --uid-map 0:0:65536 --gid-map 0:0:65536 --image "$layout:$TAG" "$work/bundle" >/dev/null
rm -rf "$work/bundle/rootfs"
mv "$r" "$work/bundle/rootfs"
umoci repack --image "$layout:$TAG" "$work/bundle"
umoci config --image "$layout:$TAG" --os linux --architecture amd64 \
  --config.entrypoint /usr/local/bin/tocsin --config.cmd --version \
  --config.user 65532:65532 --config.workingdir / \
  --config.label "org.opencontainers.image.title=tocsin" \
  --config.label "org.opencontainers.image.version=$TAG"
umoci gc --layout "$layout"
mkdir -p "$OUT"
tar -C "$layout" --sort=name --owner=0 --group=0 --numeric-owner -cf "$OUT/tocsin.oci.tar" .
echo "image: $OUT/tocsin.oci.tar (tocsin:$TAG): $(du -k "$OUT/tocsin.oci.tar" | cut -f1) KiB archive," \
  "$(du -sk "$work/bundle/rootfs" | cut -f1) KiB unpacked"
