#!/usr/bin/env bash
# Installs the Debian packages that the build, the tests and the demo need.
# Runs apt-get only when something is missing, so repeated `make test` runs stay fast.
set -euo pipefail
PACKAGES=(
  # toolchain
  cmake ninja-build g++ make pkg-config ccache git
  # clang + libFuzzer runtime for the fuzz targets
  clang libclang-rt-14-dev llvm
  # libraries
  libcli11-dev libfmt-dev nlohmann-json3-dev libyaml-cpp-dev libgtest-dev libsimdjson-dev libcurl4-openssl-dev
  libfabric-dev
  # agent attribution: the gRPC client of tocsin-podresources.so, and the fake kubelet of its tests
  libgrpc++-dev python3-grpcio
  # bench net: libfabric's fi_info, namespaces and tc for the multi-node tests
  libfabric-bin iproute2
  # bench storage: the FUSE test filesystem (slow or hung on demand)
  libfuse3-dev fuse3
  # agent: metrics data model and text format, its HTTP server, and promtool to lint the output
  prometheus-cpp-dev libcivetweb-dev libcpp-httplib-dev prometheus
  # live `audit` tests: certificates for the test API server, and kubectl as a real client
  openssl
  # fixture generators and bench/ scripts (GNU time for peak RSS)
  python3 python3-yaml python3-jsonschema time
  # make image: a Debian root filesystem, an OCI image from it, and a runtime to try it in
  mmdebstrap umoci podman crun uidmap
  # bench/time_to_detect.sh: Prometheus's notifications, delivered to a local webhook
  prometheus-alertmanager
)
missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
# kubectl: the machine's own when it has one (a gcloud dispatcher, say), else Debian's.
if ! command -v kubectl >/dev/null 2>&1; then
  missing+=(kubernetes-client)
fi
# Node.js and npm (the machine's own, else Debian's): CEL expressions of deploy/'s admission
# policies are evaluated offline with the npm package @bufbuild/cel.
if ! command -v npm >/dev/null 2>&1; then
  missing+=(nodejs npm)
fi
if [ ${#missing[@]} -gt 0 ]; then
  echo "deps: installing ${missing[*]}"
  if [ "$(id -u)" -ne 0 ]; then
    echo "deps: missing packages and not root; run: sudo apt-get install ${missing[*]}" >&2
    exit 2
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
# npm packages, pinned, cached outside the repository (tests find them through NODE_PATH or
# $TOCSIN_NPM_DIR): @bufbuild/cel evaluates the admission policies' CEL; kubernetes-models and
# @kubernetes-models/prometheus-operator hold the schemas every rendered manifest is checked against.
NPM_CACHE=${TOCSIN_NPM_DIR:-/var/cache/tocsin/npm}
NPM_PACKAGES=("@bufbuild/cel@0.6.1" "kubernetes-models@5.1.0" "@kubernetes-models/prometheus-operator@6.0.0")
npm_missing=()
for spec in "${NPM_PACKAGES[@]}"; do
  name=${spec%@*}
  version=${spec##*@}
  if [ ! -f "$NPM_CACHE/node_modules/$name/package.json" ] ||
     ! grep -q "\"version\": \"$version\"" "$NPM_CACHE/node_modules/$name/package.json"; then
    npm_missing+=("$spec")
  fi
done
if [ ${#npm_missing[@]} -gt 0 ]; then
  echo "deps: npm install ${npm_missing[*]} into $NPM_CACHE"
  mkdir -p "$NPM_CACHE"
  npm install --silent --no-audit --no-fund --prefix "$NPM_CACHE" "${NPM_PACKAGES[@]}" >/dev/null
fi
