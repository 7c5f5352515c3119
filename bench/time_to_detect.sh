#!/usr/bin/env bash
# Time to detect, end to end (bench/time_to_detect.py says what runs and what is measured): each
# failure class of the fabric outage, from its injection to Alertmanager's notification, after a
# healthy run that must stay quiet. Uses the control plane of TOCSIN_K8S_ENV when set, else starts
# its own (state in build/k8s-ttd, namespaces ttd-*) and always takes it down.
#   bench/time_to_detect.sh                 # the full run: 15 min quiet, every row (~20 min)
#   bench/time_to_detect.sh --quiet 120     # a shorter healthy window
#   bench/time_to_detect.sh --short         # what make test runs
# Needs `make build` (or `make test-build`) and, for the probe row, slowfs from `make test-build`.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${TOCSIN_K8S_ENV:-}" ]; then
  tocsin=build/release/tocsin
  [ -x "$tocsin" ] || tocsin=build/test/tocsin
  [ -x "$tocsin" ] || { echo "time_to_detect: no tocsin binary (make build)" >&2; exit 2; }
  export K8S_STATE=$PWD/build/k8s-ttd K8S_NETNS_PREFIX=ttd K8S_SUBNET=10.78.2 K8S_TOCSIN=$PWD/$tocsin
  trap 'tools/k8s/down.sh >/dev/null' EXIT
  trap 'exit 130' INT TERM
  tools/k8s/up.sh >/dev/null
  export TOCSIN_K8S_ENV=$K8S_STATE/env
fi
python3 bench/time_to_detect.py "$@"
