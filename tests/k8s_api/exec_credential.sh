#!/bin/sh
# An exec credential plugin for the tests (client.authentication.k8s.io/v1): prints a token, but
# only when kubectl's KUBERNETES_EXEC_INFO arrived and says it is not interactive.
case "$KUBERNETES_EXEC_INFO" in
  *'"interactive":false'*) ;;
  *) echo "exec_credential.sh: KUBERNETES_EXEC_INFO missing or interactive" >&2; exit 1 ;;
esac
printf '{"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1","status":{"token":"%s","expirationTimestamp":"2200-01-01T00:00:00Z"}}\n' "${1:?token}"
