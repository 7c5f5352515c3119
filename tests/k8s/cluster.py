"""Access to the real control plane that tools/k8s/up.sh started, for the real-cluster tests.

TOCSIN_K8S_ENV names the env file up.sh wrote (K8S_SERVER, K8S_STATE, KUBECONFIG, ...). `make test`
sets it; by hand: `make k8s-up` then `TOCSIN_K8S_ENV=build/k8s/env python3 tests/k8s/...`.
Every wait is bounded (Cluster.wait_for); nothing sleeps as synchronisation.
"""
import base64
import json
import os
import ssl
import subprocess
import time
import unittest
import urllib.error
import urllib.request

SOURCE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def no_skip():
    """TOCSIN_NO_SKIP is set (CI, as root): a test that would skip fails instead."""
    return os.environ.get("TOCSIN_NO_SKIP", "") not in ("", "0")


def skip(why):
    """Skips the test (or the class, from setUpClass) saying why; under TOCSIN_NO_SKIP, fails."""
    if no_skip():
        raise AssertionError("would skip, but TOCSIN_NO_SKIP is set (CI must run this test): " + why)
    raise unittest.SkipTest(why)


def load_env():
    """The env file's variables, or None (and the reason) when no control plane is up."""
    path = os.environ.get("TOCSIN_K8S_ENV", "")
    if not path:
        return None, ("TOCSIN_K8S_ENV is not set: no real control plane is up "
                      "(make test brings one up; by hand: make k8s-up, TOCSIN_K8S_ENV=build/k8s/env)")
    if not os.path.exists(path):
        return None, f"TOCSIN_K8S_ENV={path} does not exist (is the control plane up?)"
    env = {}
    with open(path) as f:
        for line in f:
            key, _, value = line.strip().partition("=")
            if key:
                env[key] = value
    return env, ""


class ApiError(Exception):
    def __init__(self, code, body):
        super().__init__(f"HTTP {code}: {body[:300]}")
        self.code = code
        self.body = body


class Cluster:
    def __init__(self, env):
        self.env = env
        self.server = env["K8S_SERVER"]
        self.state = env["K8S_STATE"]
        self.kubeconfig = env["KUBECONFIG"]
        self.ca = os.path.join(self.state, "pki", "ca.crt")

    # --- kubectl, the real client -------------------------------------------------------------
    def kubectl(self, *args, check=True, stdin=None, kubeconfig=None, timeout=60):
        env = dict(os.environ, KUBECONFIG=kubeconfig or self.kubeconfig)
        r = subprocess.run(["kubectl", *args], input=stdin, capture_output=True, text=True,
                           env=env, timeout=timeout)
        if check and r.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} exited {r.returncode}: {r.stderr}")
        return r

    def get(self, *args):
        return json.loads(self.kubectl("get", *args, "-o", "json").stdout)

    # --- raw API calls, with the admin certificate or a bearer token ----------------------------
    def _context(self, token):
        ctx = ssl.create_default_context(cafile=self.ca)
        if token is None:
            pki = os.path.join(self.state, "pki")
            ctx.load_cert_chain(os.path.join(pki, "admin.crt"), os.path.join(pki, "admin.key"))
        return ctx

    def api(self, method, path, body=None, token=None, content_type="application/json"):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.server + path, data=data, method=method)
        if data is not None:
            req.add_header("Content-Type", content_type)
        if token is not None:
            req.add_header("Authorization", "Bearer " + token)
        try:
            with urllib.request.urlopen(req, context=self._context(token), timeout=20) as resp:
                return json.loads(resp.read() or b"{}")
        except urllib.error.HTTPError as e:
            raise ApiError(e.code, e.read().decode(errors="replace")) from None

    def status_of(self, method, path, body=None, token=None, content_type="application/json"):
        """The HTTP status code of a call (200 when it succeeded)."""
        try:
            self.api(method, path, body, token, content_type)
            return 200
        except ApiError as e:
            return e.code

    def service_account_token(self, namespace, name, timeout=60):
        """The legacy token of a ServiceAccount (1.20: a Secret the token controller creates)."""
        def token():
            sa = self.api("GET", f"/api/v1/namespaces/{namespace}/serviceaccounts/{name}")
            for ref in sa.get("secrets") or []:
                secret = self.api("GET", f"/api/v1/namespaces/{namespace}/secrets/{ref['name']}")
                if secret.get("type") == "kubernetes.io/service-account-token":
                    return base64.b64decode(secret["data"]["token"]).decode()
            return None
        return self.wait_for(token, timeout, f"a token for serviceaccount {namespace}/{name}")

    def token_kubeconfig(self, path, token):
        with open(path, "w") as f:
            f.write("apiVersion: v1\nkind: Config\ncurrent-context: sa\n"
                    f"clusters:\n- name: c\n  cluster: {{server: \"{self.server}\", "
                    f"certificate-authority: \"{self.ca}\"}}\n"
                    "contexts:\n- name: sa\n  context: {cluster: c, user: sa}\n"
                    f"users:\n- name: sa\n  user: {{token: \"{token}\"}}\n")
        return path

    # --- bounded waiting ------------------------------------------------------------------------
    @staticmethod
    def wait_for(fn, timeout, what, interval=0.25):
        """Polls fn until it returns something truthy; fails the test with `what` at the deadline."""
        deadline = time.monotonic() + timeout
        last = None
        while True:
            try:
                value = fn()
                if value:
                    return value
                last = value
            except (ApiError, AssertionError, KeyError, IndexError) as e:
                last = e
            if time.monotonic() >= deadline:
                raise AssertionError(f"timed out after {timeout} s waiting for {what} (last: {last!r})")
            time.sleep(interval)

    def namespace(self, name):
        """A fresh namespace (deleted first if a previous run left it)."""
        self.kubectl("delete", "namespace", name, "--ignore-not-found", "--wait=true", timeout=120)
        self.kubectl("create", "namespace", name)
        return name


def write_plain_kubeconfig(path, server):
    """A kubeconfig for an API server without authentication (the test API server over HTTP)."""
    with open(path, "w") as f:
        f.write("apiVersion: v1\nkind: Config\ncurrent-context: c\n"
                f"clusters:\n- name: c\n  cluster: {{server: \"{server}\"}}\n"
                "contexts:\n- name: c\n  context: {cluster: c, user: u}\n"
                "users:\n- name: u\n  user: {}\n")
    return path


def tocsin_binary():
    return os.environ.get("TOCSIN_BINARY") or os.path.join(SOURCE, "build", "test", "tocsin")


def run_tocsin(*args, env=None, timeout=120):
    full_env = dict(os.environ)
    full_env.update(env or {})
    return subprocess.run([tocsin_binary(), *args], capture_output=True, text=True, env=full_env,
                          timeout=timeout)


class ClusterTestCase(unittest.TestCase):
    cluster = None

    @classmethod
    def setUpClass(cls):
        env, why = load_env()
        if env is None:
            skip(why)
        cls.cluster = Cluster(env)
