#!/usr/bin/env bash
# Makes a throw-away CA, a server certificate for 127.0.0.1, localhost and api.tocsin.test (a name
# only a kubeconfig's tls-server-name can reach) and a client certificate
# (CN tocsin-test, O system:masters) in DIR, for the test API server. EC P-256 keys: fast.
set -euo pipefail
dir=${1:?usage: make_certs.sh DIR}
mkdir -p "$dir"
cd "$dir"
ossl() { openssl "$@" 2>/dev/null; }
ossl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
  -subj "/CN=tocsin-test-ca" -keyout ca.key -out ca.crt
sign() {  # name subject extensions
  ossl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj "$2" \
    -keyout "$1.key" -out "$1.csr"
  printf '%s\n' "$3" > "$1.ext"
  ossl x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 \
    -extfile "$1.ext" -out "$1.crt"
}
sign server "/CN=127.0.0.1" "subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:api.tocsin.test
extendedKeyUsage=serverAuth"
sign client "/O=system:masters/CN=tocsin-test" "extendedKeyUsage=clientAuth"
# A second CA that signed nothing here: a kubeconfig that trusts it must fail verification.
ossl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
  -subj "/CN=other-ca" -keyout other-ca.key -out other-ca.crt
