# A throw-away certificate authority for tests (sourced; run in the folder that holds the files).
# EC P-256 keys: fast. Used by tools/k8s/up.sh and tests/k8s_api/make_certs.sh.

ossl() { openssl "$@" 2>/dev/null; }

new_ca() {  # name subject days
  ossl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days "$3" \
    -subj "$2" -keyout "$1.key" -out "$1.crt"
}

sign() {  # name subject extensions [days]: NAME.key and NAME.crt signed by ca.key
  ossl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj "$2" \
    -keyout "$1.key" -out "$1.csr"
  printf '%s\n' "$3" >"$1.ext"
  ossl x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -days "${4:-7}" \
    -extfile "$1.ext" -out "$1.crt"
  rm -f "$1.csr" "$1.ext"
}
