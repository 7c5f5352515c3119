#!/usr/bin/env bash
# Builds kube-apiserver, kube-scheduler and kube-controller-manager 1.20.2 from Debian 12's
# `kubernetes` source package, offline (GOPATH mode, the package's own vendor/ folder), once per
# machine (golang-go, etcd-server and rsync from Debian). The binaries are cached outside the repository, keyed by the upstream version:
#   ${TOCSIN_K8S_CACHE:-/var/cache/tocsin}/k8s-1.20.2/bin/{kube-apiserver,kube-scheduler,kube-controller-manager}
# Prints the bin directory on stdout. Everything else goes to stderr.
#
# The source comes through apt with a private sources list and lists directory (deb-src entries
# derived from the machine's own deb entries), so the system's apt configuration is untouched.
set -euo pipefail
UPSTREAM=1.20.2
if [ -n "${TOCSIN_K8S_CACHE:-}" ]; then
  CACHE_ROOT=$TOCSIN_K8S_CACHE
elif [ "$(id -u)" -eq 0 ] || [ -w /var/cache/tocsin ]; then
  CACHE_ROOT=/var/cache/tocsin
else
  CACHE_ROOT=${XDG_CACHE_HOME:-$HOME/.cache}/tocsin
fi
CACHE=$CACHE_ROOT/k8s-$UPSTREAM
BINS=(kube-apiserver kube-scheduler kube-controller-manager)
log() { echo "k8s-build: $*" >&2; }

have_all() {
  for b in "${BINS[@]}"; do [ -x "$CACHE/bin/$b" ] || return 1; done
  [ -f "$CACHE/bin/SOURCE" ]
}

install_packages() {
  local missing=()
  for p in golang-go etcd-server rsync golang-github-modern-go-reflect2-dev golang-github-json-iterator-go-dev; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  if [ "$(id -u)" -ne 0 ]; then
    log "missing packages and not root; run: sudo apt-get install ${missing[*]}"
    exit 2
  fi
  log "installing ${missing[*]}"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2 ||
    { DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2 &&
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2; }
  # etcd-server's package starts a system etcd on 127.0.0.1:2379 under systemd: the tests start
  # their own (TLS, client certificates), so the package's is stopped and disabled.
  if [ -d /run/systemd/system ]; then
    systemctl disable --now etcd >/dev/null 2>&1 || true
  fi
}

install_packages
if have_all; then
  echo "$CACHE/bin"
  exit 0
fi

mkdir -p "$CACHE_ROOT"
# One build at a time on a machine (make test and make k8s-up may race).
exec 9>"$CACHE_ROOT/k8s-build.lock"
flock -w 3600 9 || { log "another build has held $CACHE_ROOT/k8s-build.lock for an hour"; exit 1; }
# What an interrupted build left (the unpacked source tree) goes now.
rm -rf "$CACHE_ROOT"/k8s-build.??????
if have_all; then echo "$CACHE/bin"; exit 0; fi

WORK=$(mktemp -d "$CACHE_ROOT/k8s-build.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$WORK/apt/parts" "$WORK/apt/lists/partial" "$WORK/src"

# deb-src entries from the machine's own deb entries (deb822 .sources files and one-line lists).
for f in /etc/apt/sources.list.d/*.sources; do
  [ -f "$f" ] || continue
  sed -e 's/^Types:.*$/Types: deb-src/' "$f" >"$WORK/apt/parts/$(basename "$f")"
done
for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
  [ -f "$f" ] || continue
  sed -n -e 's/^deb \(.*\)$/deb-src \1/p' "$f" >"$WORK/apt/parts/$(basename "$f")"
done
APT=(apt-get -q -o Dir::Etc::SourceList=/dev/null -o "Dir::Etc::SourceParts=$WORK/apt/parts"
     -o "Dir::State::Lists=$WORK/apt/lists" -o APT::Sandbox::User=root)
log "fetching Debian's kubernetes source package"
"${APT[@]}" update >&2
(cd "$WORK/src" && "${APT[@]}" source --download-only kubernetes >&2)
ORIG=$(ls "$WORK"/src/kubernetes_*"$UPSTREAM".orig.tar.* 2>/dev/null | head -n1)
DSC=$(ls "$WORK"/src/kubernetes_*.dsc | head -n1)
if [ -z "$ORIG" ]; then
  log "Debian's kubernetes source is not upstream $UPSTREAM: $(ls "$WORK/src")"
  exit 1
fi
tar -C "$WORK/src" -xf "$ORIG"
TREE="$WORK/src/kubernetes-$UPSTREAM"

# 1.20's vendored reflect2 1.0.1 crashes under Go >= 1.18 (SIGSEGV in mapiterinit on the first
# apply): take Debian's reflect2 1.0.2 and json-iterator 1.1.12 instead.
for pkg in github.com/modern-go/reflect2 github.com/json-iterator/go; do
  rm -rf "$TREE/vendor/$pkg"
  mkdir -p "$TREE/vendor/$pkg"
  cp -rL "/usr/share/gocode/src/$pkg/." "$TREE/vendor/$pkg/"
  find "$TREE/vendor/$pkg" -name '*_test.go' -delete
done

log "building ${BINS[*]} (about 10 minutes on 2 cores, once per machine)"
start=$(date +%s)
(cd "$TREE" && GO111MODULE=off GOPROXY=off GOFLAGS= GOLDFLAGS="-s -w" \
  make WHAT="cmd/kube-apiserver cmd/kube-scheduler cmd/kube-controller-manager" >&2)
mkdir -p "$CACHE/bin.new"
for b in "${BINS[@]}"; do
  cp "$TREE/_output/local/bin/linux/amd64/$b" "$CACHE/bin.new/$b"
done
basename "$DSC" .dsc >"$CACHE/bin.new/SOURCE"
rm -rf "$CACHE/bin"
mv "$CACHE/bin.new" "$CACHE/bin"
log "built in $(( $(date +%s) - start )) s: $CACHE/bin"
echo "$CACHE/bin"
