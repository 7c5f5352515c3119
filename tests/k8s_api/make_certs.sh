#!/usr/bin/env bash
# Makes a throw-away CA, a server certificate for 127.0.0.1, localhost and api.tocsin.test (a name
# only a kubeconfig's tls-server-name can reach) and a client certificate
# (CN tocsin-test, O system:masters) in DIR, for the test API server. EC P-256 keys: fast.
set -euo pipefail
dir=${1:?usage: make_certs.sh DIR}
# shellcheck source=tools/pki.sh
. "$(cd "$(dirname "$0")/../.." && pwd)/tools/pki.sh"
mkdir -p "$dir"
cd "$dir"
new_ca ca "/CN=tocsin-test-ca" 2
sign server "/CN=127.0.0.1" "subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:api.tocsin.test
extendedKeyUsage=serverAuth"
sign client "/O=system:masters/CN=tocsin-test" "extendedKeyUsage=clientAuth"
# A second CA that signed nothing here: a kubeconfig that trusts it must fail verification.
new_ca other-ca "/CN=other-ca" 2
