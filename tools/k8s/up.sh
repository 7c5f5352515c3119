#!/usr/bin/env bash
# Starts a real Kubernetes 1.20.2 control plane for tests, on 127.0.0.1 only:
#   etcd (Debian's), kube-apiserver, kube-scheduler, kube-controller-manager (tools/k8s/build.sh)
#   and the test kubelet (tools/k8s/kubelet.py) for the nodes of K8S_NODES (a v1 NodeList).
# Writes STATE/admin.kubeconfig (STATE = K8S_STATE, default build/k8s) and STATE/env, prints
# `export KUBECONFIG=...`. Idempotent: a running, ready control plane is reused. Ports are picked
# free. Everything started is recorded in STATE/pids and stopped by tools/k8s/down.sh.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
STATE=${K8S_STATE:-$ROOT/build/k8s}
NODES=$(realpath "${K8S_NODES:-$ROOT/testdata/k8s/nodes.json}")
TOCSIN=${K8S_TOCSIN:-$ROOT/build/release/tocsin}
NETNS_PREFIX=${K8S_NETNS_PREFIX:-tk}
MAX_PROCS=${K8S_MAX_PROCS:-64}
SUBNET=${K8S_SUBNET:-10.78.0}   # node i is SUBNET.i in its namespace, the bridge SUBNET.254
log() { echo "k8s-up: $*" >&2; }
# Keys, tokens, pods' secrets and logs: readable by this user only.
umask 077

mkdir -p "$(dirname "$STATE")"
STATE=$(cd "$(dirname "$STATE")" && pwd)/$(basename "$STATE")
KUBECONFIG_PATH=$STATE/admin.kubeconfig
MARKER=.tocsin-k8s-state   # down.sh removes only a folder that has it
# One up.sh or down.sh at a time per state folder.
exec 8>"$STATE.lock"
flock -w 600 8 || { log "another up.sh or down.sh holds $STATE.lock"; exit 1; }
export TOCSIN_K8S_LOCKED=1

# shellcheck source=tools/k8s/proc.sh
. "$ROOT/tools/k8s/proc.sh"

ready() {  # the apiserver answers /readyz with the admin certificate, and every process is ours
  [ -f "$STATE/$MARKER" ] && [ -f "$STATE/env" ] && [ -f "$STATE/pids" ] || return 1
  [ "$(stat -c %u "$STATE")" = "$(id -u)" ] || return 1
  local name pid start
  while read -r name pid start; do same_process "$pid" "$start" || return 1; done <"$STATE/pids"
  local server
  server=$(sed -n 's/^K8S_SERVER=//p' "$STATE/env")
  curl -sf --max-time 5 --cacert "$STATE/pki/ca.crt" --cert "$STATE/pki/admin.crt" \
    --key "$STATE/pki/admin.key" "$server/readyz" >/dev/null
}

if ready && grep -qxF "K8S_NODES=$NODES" "$STATE/env" && grep -qxF "K8S_TOCSIN=$TOCSIN" "$STATE/env"; then
  log "already up ($STATE)"
  echo "export KUBECONFIG=$KUBECONFIG_PATH"
  exit 0
fi
if [ -e "$STATE" ]; then
  log "a previous control plane in $STATE is not ready: stopping it first"
  K8S_STATE=$STATE "$ROOT/tools/k8s/down.sh"
fi

BIN=$("$ROOT/tools/k8s/build.sh")
ETCD=$(command -v etcd)
mkdir -p -m 700 "$STATE"
chmod 700 "$STATE"
touch "$STATE/$MARKER"
mkdir -p "$STATE/pki" "$STATE/logs"
: >"$STATE/pids"
# Until it is ready, a failure or an interrupt takes down what was started.
trap 'log "interrupted or failed: stopping what was started"; "$ROOT/tools/k8s/down.sh" || true' EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
ETCD_PORT=$(free_port); ETCD_PEER=$(free_port); API_PORT=$(free_port)
SCHED_PORT=$(free_port); CM_PORT=$(free_port)
SERVER=https://127.0.0.1:$API_PORT

# --- certificates: a throw-away CA (EC P-256, fast), one cert per component -----------------------
(
  cd "$STATE/pki"
  # shellcheck source=tools/pki.sh
  . "$ROOT/tools/pki.sh"
  new_ca ca "/CN=tocsin-test-kubernetes-ca" 7
  sign apiserver "/CN=kube-apiserver" "subjectAltName=IP:127.0.0.1,IP:10.96.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local
extendedKeyUsage=serverAuth"
  sign admin "/O=system:masters/CN=kubernetes-admin" "extendedKeyUsage=clientAuth"
  # etcd takes only clients (and peers) with a certificate of this CA.
  sign etcd "/CN=etcd" "subjectAltName=IP:127.0.0.1,DNS:localhost
extendedKeyUsage=serverAuth,clientAuth"
  sign apiserver-etcd-client "/CN=kube-apiserver-etcd-client" "extendedKeyUsage=clientAuth"
  sign scheduler "/CN=system:kube-scheduler" "extendedKeyUsage=clientAuth"
  sign controller-manager "/CN=system:kube-controller-manager" "extendedKeyUsage=clientAuth"
  sign apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client" \
    "extendedKeyUsage=clientAuth"
  sans="IP:127.0.0.1,DNS:localhost"
  for i in $(seq 1 253); do sans="$sans,IP:$SUBNET.$i"; done
  sign kubelet "/CN=tocsin-test-kubelet" "subjectAltName=$sans
extendedKeyUsage=serverAuth"
  # ServiceAccount token signing keys (RSA: the token controller and the apiserver need RS256).
  ossl genrsa -out sa.key 2048
  ossl rsa -in sa.key -pubout -out sa.pub
  chmod 600 ./*.key
)

# --- static tokens: one per node (system:node:NAME in system:nodes) --------------------------------
python3 - "$NODES" "$STATE" <<'EOF'
import json, secrets, sys
nodes, state = sys.argv[1], sys.argv[2]
names = [n["metadata"]["name"] for n in json.load(open(nodes))["items"]]
tokens = {n: secrets.token_hex(16) for n in names}
with open(f"{state}/node-tokens.json", "w") as f:
    json.dump(tokens, f)
with open(f"{state}/pki/tokens.csv", "w") as f:
    for i, n in enumerate(names):
        f.write(f'{tokens[n]},system:node:{n},node-{i},"system:nodes"\n')
EOF
chmod 600 "$STATE/node-tokens.json" "$STATE/pki/tokens.csv"

kubeconfig() {  # file user cert key
  cat >"$1" <<EOF
apiVersion: v1
kind: Config
current-context: $2
clusters:
- name: tocsin-test
  cluster: {server: "$SERVER", certificate-authority: "$STATE/pki/ca.crt"}
contexts:
- name: $2
  context: {cluster: tocsin-test, user: $2}
users:
- name: $2
  user: {client-certificate: "$STATE/pki/$3.crt", client-key: "$STATE/pki/$3.key"}
EOF
}
kubeconfig "$STATE/scheduler.kubeconfig" scheduler scheduler
kubeconfig "$STATE/controller-manager.kubeconfig" controller-manager controller-manager
kubeconfig "$KUBECONFIG_PATH.tmp" admin admin

start() {  # name command...: runs in its own session, output to STATE/logs/name.log
  local name=$1; shift
  setsid "$@" >"$STATE/logs/$name.log" 2>&1 </dev/null 8>&- &
  local pid=$!
  # The start time tells down.sh that a pid is still this process (pids are reused).
  echo "$name $pid $(start_time "$pid")" >>"$STATE/pids"
}
fail() {
  log "$1; last lines of $STATE/logs/$2.log:"
  tail -n 20 "$STATE/logs/$2.log" >&2 || true
  exit 1  # the EXIT trap stops what was started
}
wait_for() {  # name seconds command...: polls until the command succeeds (bounded)
  local name=$1 deadline=$(( $(date +%s) + $2 )); shift 2
  until "$@" >/dev/null 2>&1; do
    local pid start
    read -r pid start < <(awk -v n="$name" '$1==n {print $2, $3}' "$STATE/pids")
    same_process "$pid" "$start" || fail "$name exited" "$name"
    [ "$(date +%s)" -lt "$deadline" ] || fail "$name not ready after $2 s" "$name"
    sleep 0.2
  done
}

# etcd's data on tmpfs when there is one: the control plane is throw-away and fsync is its cost.
if [ -d /dev/shm ] && [ -w /dev/shm ]; then
  ETCD_DATA=$(mktemp -d /dev/shm/tocsin-k8s-etcd.XXXXXX)
else
  ETCD_DATA=$STATE/etcd
fi
echo "$ETCD_DATA" >"$STATE/etcd-data"
PKI=$STATE/pki
start etcd "$ETCD" --name tocsin-test --data-dir "$ETCD_DATA" \
  --listen-client-urls "https://127.0.0.1:$ETCD_PORT" --advertise-client-urls "https://127.0.0.1:$ETCD_PORT" \
  --listen-peer-urls "https://127.0.0.1:$ETCD_PEER" --initial-advertise-peer-urls "https://127.0.0.1:$ETCD_PEER" \
  --initial-cluster "tocsin-test=https://127.0.0.1:$ETCD_PEER" \
  --cert-file "$PKI/etcd.crt" --key-file "$PKI/etcd.key" --client-cert-auth --trusted-ca-file "$PKI/ca.crt" \
  --peer-cert-file "$PKI/etcd.crt" --peer-key-file "$PKI/etcd.key" --peer-client-cert-auth \
  --peer-trusted-ca-file "$PKI/ca.crt" --snapshot-count 100000 --log-level warn
wait_for etcd 30 curl -sf --max-time 2 --cacert "$PKI/ca.crt" --cert "$PKI/apiserver-etcd-client.crt" \
  --key "$PKI/apiserver-etcd-client.key" "https://127.0.0.1:$ETCD_PORT/health"

# Admission plugins as a production cluster has them (kubeadm's defaults plus NodeRestriction).
# Jobs are served without the watch cache, straight from etcd: a watch that resumes from before an
# etcd compaction gets the real 410 Expired (tests/k8s/controller_test.py compacts on purpose).
start kube-apiserver "$BIN/kube-apiserver" \
  --bind-address=127.0.0.1 --advertise-address=127.0.0.1 --secure-port="$API_PORT" --insecure-port=0 \
  --etcd-servers="https://127.0.0.1:$ETCD_PORT" --etcd-cafile="$PKI/ca.crt" \
  --etcd-certfile="$PKI/apiserver-etcd-client.crt" --etcd-keyfile="$PKI/apiserver-etcd-client.key" \
  --tls-cert-file="$STATE/pki/apiserver.crt" --tls-private-key-file="$STATE/pki/apiserver.key" \
  --client-ca-file="$STATE/pki/ca.crt" --token-auth-file="$STATE/pki/tokens.csv" \
  --authorization-mode=Node,RBAC \
  --enable-admission-plugins=NamespaceLifecycle,LimitRanger,ServiceAccount,TaintNodesByCondition,Priority,DefaultTolerationSeconds,DefaultStorageClass,StorageObjectInUseProtection,PersistentVolumeClaimResize,RuntimeClass,CertificateApproval,CertificateSigning,CertificateSubjectRestriction,DefaultIngressClass,MutatingAdmissionWebhook,ValidatingAdmissionWebhook,ResourceQuota,NodeRestriction \
  --service-account-key-file="$STATE/pki/sa.pub" --service-account-signing-key-file="$STATE/pki/sa.key" \
  --service-account-issuer=https://kubernetes.default.svc.cluster.local \
  --service-cluster-ip-range=10.96.0.0/16 \
  --kubelet-client-certificate="$STATE/pki/apiserver-kubelet-client.crt" \
  --kubelet-client-key="$STATE/pki/apiserver-kubelet-client.key" \
  --kubelet-certificate-authority="$STATE/pki/ca.crt" --kubelet-preferred-address-types=InternalIP \
  --allow-privileged=true --profiling=false --cert-dir="$STATE/pki/generated" --event-ttl=1h \
  --watch-cache-sizes=jobs.batch#0 \
  --v=1
APICURL=(curl -sf --max-time 2 --cacert "$STATE/pki/ca.crt" --cert "$STATE/pki/admin.crt"
         --key "$STATE/pki/admin.key")
wait_for kube-apiserver 90 "${APICURL[@]}" "$SERVER/readyz"

start kube-scheduler "$BIN/kube-scheduler" --kubeconfig="$STATE/scheduler.kubeconfig" \
  --authentication-kubeconfig="$STATE/scheduler.kubeconfig" \
  --authorization-kubeconfig="$STATE/scheduler.kubeconfig" \
  --bind-address=127.0.0.1 --secure-port="$SCHED_PORT" --port=0 --leader-elect=false \
  --cert-dir="$STATE/pki/generated-scheduler" --v=1
# The controllers a workload needs; node-lifecycle, IPAM, route, service and volume controllers off
# (no cloud, no kube-proxy, no volumes here).
start kube-controller-manager "$BIN/kube-controller-manager" \
  --kubeconfig="$STATE/controller-manager.kubeconfig" \
  --authentication-kubeconfig="$STATE/controller-manager.kubeconfig" \
  --authorization-kubeconfig="$STATE/controller-manager.kubeconfig" \
  --bind-address=127.0.0.1 --secure-port="$CM_PORT" --port=0 --leader-elect=false \
  --cert-dir="$STATE/pki/generated-cm" \
  --service-account-private-key-file="$STATE/pki/sa.key" --root-ca-file="$STATE/pki/ca.crt" \
  --use-service-account-credentials=true \
  --controllers=daemonset,job,cronjob,replicaset,deployment,statefulset,replicationcontroller,garbagecollector,namespace,serviceaccount,serviceaccount-token,clusterrole-aggregation,root-ca-cert-publisher,podgc,endpoint,endpointslice,disruption,resourcequota,ttl,pvc-protection,pv-protection,csrapproving \
  --v=1
wait_for kube-scheduler 60 curl -skf --max-time 2 "https://127.0.0.1:$SCHED_PORT/healthz"
wait_for kube-controller-manager 60 curl -skf --max-time 2 "https://127.0.0.1:$CM_PORT/healthz"
mv "$KUBECONFIG_PATH.tmp" "$KUBECONFIG_PATH"

cat >"$STATE/env" <<EOF
K8S_SERVER=$SERVER
K8S_API_PORT=$API_PORT
K8S_ETCD_PORT=$ETCD_PORT
K8S_STATE=$STATE
K8S_BIN=$BIN
K8S_NODES=$NODES
K8S_TOCSIN=$TOCSIN
K8S_NETNS_PREFIX=$NETNS_PREFIX
K8S_SUBNET=$SUBNET
KUBECONFIG=$KUBECONFIG_PATH
EOF

# The test kubelet: registers the nodes, keeps them Ready, runs the pods bound to them.
if [ "${K8S_KUBELET:-1}" = 1 ]; then
  netns=$NETNS_PREFIX
  if [ "$(id -u)" -ne 0 ]; then
    log "not root: no network namespaces, every node is 127.0.0.1 and pods share the host's network"
    netns=""
  fi
  start kubelet python3 "$ROOT/tools/k8s/kubelet.py" --server "$SERVER" --ca "$STATE/pki/ca.crt" \
    --admin-cert "$STATE/pki/admin.crt" --admin-key "$STATE/pki/admin.key" \
    --node-tokens "$STATE/node-tokens.json" --nodes "$NODES" \
    --serving-cert "$STATE/pki/kubelet.crt" --serving-key "$STATE/pki/kubelet.key" \
    --client-ca "$STATE/pki/ca.crt" --state "$STATE/kubelet" --tocsin "$TOCSIN" \
    --netns-prefix "$netns" --subnet "$SUBNET" --max-procs "$MAX_PROCS" --ready-file "$STATE/kubelet.ready" \
    --pid-file "$STATE/kubelet.pid"
  wait_for kubelet 60 test -f "$STATE/kubelet.ready"
fi
trap - EXIT
log "ready: $SERVER (kube-apiserver $("${APICURL[@]}" "$SERVER/version" | python3 -c 'import json,sys; print(json.load(sys.stdin)["gitVersion"])'))"
echo "export KUBECONFIG=$KUBECONFIG_PATH"
