#!/usr/bin/env python3
"""deploy/base and its overlays, without a cluster: each overlay renders with kustomize (as
`kubectl apply -k deploy/overlays/<name>` does) to exactly its objects; every object passes the
schemas of npm's kubernetes-models and @kubernetes-models/prometheus-operator; the references
inside the bundle hold (ServiceAccounts, ConfigMaps, selectors, the Events Role in `default`);
the scrape jobs are the ones the alerts select, and promtool takes the scrape config with the
rules; exporter-only writes nothing to the API; the generated rules are up to date; the canary
component adds exactly `--canary`, its RBAC and the namespace label; the policy-params component
exactly `--policy-params` and patch on one ConfigMap; the drift component `--drift-baseline`, its
ConfigMap's mount and list-only rights.

    python3 tests/k8s/deploy_kustomize_test.py -v

Needs kubectl (its built-in kustomize), promtool, node with the npm packages tools/deps.sh
installs into /var/cache/tocsin/npm ($TOCSIN_NPM_DIR), python3-yaml. The same overlays are applied
to the real 1.20 control plane (server dry-run, then for real) by real_cluster_test.py.
"""

import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEPLOY = os.path.join(ROOT, "deploy")
NPM_DIR = os.environ.get("TOCSIN_NPM_DIR", "/var/cache/tocsin/npm")
OVERLAYS = ["prometheus", "prometheus-operator", "exporter-only"]
SA_AGENT = ("tocsin", "tocsin-agent")
SA_CONTROLLER = ("tocsin", "tocsin-controller")

# What deploy/base holds: every overlay has these, minus what it removes, plus what it adds.
BASE = {
    "Namespace/tocsin",
    "ServiceAccount/tocsin/tocsin-agent", "ServiceAccount/tocsin/tocsin-controller",
    "ClusterRole/tocsin-agent", "ClusterRoleBinding/tocsin-agent",
    "Role/default/tocsin-agent-events", "RoleBinding/default/tocsin-agent-events",
    "ClusterRole/tocsin-controller", "ClusterRoleBinding/tocsin-controller",
    "Role/tocsin/tocsin-controller-lease", "RoleBinding/tocsin/tocsin-controller-lease",
    "ConfigMap/tocsin/tocsin-agent", "ConfigMap/tocsin/tocsin-rules",
    "DaemonSet/tocsin/tocsin-agent", "Deployment/tocsin/tocsin-controller",
    "PodDisruptionBudget/tocsin/tocsin-controller", "Service/tocsin/tocsin-controller",
    "ConfigMap/tocsin/tocsin-dashboard-fleet-fabric",
    "ConfigMap/tocsin/tocsin-dashboard-shared-storage",
    "ConfigMap/tocsin/tocsin-dashboard-canaries",
    "ConfigMap/tocsin/tocsin-dashboard-drift",
    "ConfigMap/tocsin/tocsin-dashboard-job-fabric",
}
EXPECTED = {
    "prometheus": BASE | {"ConfigMap/tocsin/tocsin-prometheus-scrape"},
    "prometheus-operator": BASE | {"PodMonitor/tocsin/tocsin-agent",
                                   "ServiceMonitor/tocsin/tocsin-controller",
                                   "PrometheusRule/tocsin/tocsin"},
    "exporter-only": (BASE | {"ConfigMap/tocsin/tocsin-prometheus-scrape"}) - {
        "ClusterRole/tocsin-agent", "ClusterRoleBinding/tocsin-agent",
        "Role/default/tocsin-agent-events", "RoleBinding/default/tocsin-agent-events",
        "Role/tocsin/tocsin-controller-lease", "RoleBinding/tocsin/tocsin-controller-lease",
        "PodDisruptionBudget/tocsin/tocsin-controller"},
}
READ_VERBS = {"get", "list", "watch"}


def render(path):
    r = subprocess.run(["kubectl", "kustomize", path], capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        raise AssertionError(f"kubectl kustomize {path}: {r.stderr}")
    return [d for d in yaml.safe_load_all(r.stdout) if d]


def key(doc):
    meta = doc["metadata"]
    return "/".join([doc["kind"]] + ([meta["namespace"]] if meta.get("namespace") else []) +
                    [meta["name"]])


def rule_jobs():
    """The scrape job names the alert rules select (job="..."), from the rule files."""
    jobs = set()
    for rel in ("agent/alerts.yaml", "controller/alerts.yaml"):
        with open(os.path.join(DEPLOY, rel)) as f:
            jobs |= set(re.findall(r'job="([^"]+)"', f.read()))
    return jobs


def pod_templates(docs):
    return {key(d): d["spec"]["template"] for d in docs if d["kind"] in ("DaemonSet", "Deployment")}


def matches(selector, labels):
    return all(labels.get(k) == v for k, v in selector.items())


class OverlaysTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.docs = {name: render(os.path.join(DEPLOY, "overlays", name)) for name in OVERLAYS}

    def test_each_overlay_renders_exactly_its_objects(self):
        for name in OVERLAYS:
            with self.subTest(overlay=name):
                self.assertEqual({key(d) for d in self.docs[name]}, EXPECTED[name])

    def test_every_object_passes_the_schemas(self):
        for name in OVERLAYS:
            with self.subTest(overlay=name):
                r = subprocess.run(["node", os.path.join(ROOT, "tests", "k8s", "validate_models.mjs")],
                                   input=json.dumps(self.docs[name]), capture_output=True, text=True,
                                   timeout=120, env=dict(os.environ, TOCSIN_NPM_DIR=NPM_DIR))
                self.assertEqual(r.returncode, 0,
                                 "schema validation (is kubernetes-models installed? tools/deps.sh): "
                                 + r.stdout + r.stderr)
                self.assertEqual(r.stdout.count("\nok ") + r.stdout.startswith("ok "),
                                 len(self.docs[name]), r.stdout)

    def test_every_object_is_labelled_part_of_tocsin(self):
        for name in OVERLAYS:
            for d in self.docs[name]:
                self.assertEqual(d["metadata"].get("labels", {}).get("app.kubernetes.io/part-of"),
                                 "tocsin", f"{name}: {key(d)}")

    def test_references_inside_the_bundle_hold(self):
        for name in OVERLAYS:
            docs = self.docs[name]
            keys = {key(d) for d in docs}
            for k, tpl in pod_templates(docs).items():
                ns = k.split("/")[1]
                spec = tpl["spec"]
                with self.subTest(overlay=name, workload=k):
                    self.assertIn(f"ServiceAccount/{ns}/{spec['serviceAccountName']}", keys)
                    for v in spec.get("volumes", []):
                        if "configMap" in v:
                            self.assertIn(f"ConfigMap/{ns}/{v['configMap']['name']}", keys)
            for d in docs:
                if d["kind"] in ("RoleBinding", "ClusterRoleBinding"):
                    ref = d["roleRef"]
                    ns = "" if ref["kind"] == "ClusterRole" else d["metadata"]["namespace"] + "/"
                    self.assertIn(f"{ref['kind']}/{ns}{ref['name']}", keys, f"{name}: {key(d)}")
                    for s in d["subjects"]:
                        self.assertIn(f"ServiceAccount/{s['namespace']}/{s['name']}", keys)
                if d["kind"] in ("Service", "PodDisruptionBudget", "ServiceMonitor", "PodMonitor"):
                    sel = d["spec"]["selector"]
                    sel = sel.get("matchLabels", sel) if d["kind"] != "Service" else sel
                    targets = [k for k, t in pod_templates(docs).items()
                               if matches(sel, t["metadata"]["labels"])]
                    if d["kind"] == "ServiceMonitor":  # it selects the Service, not pods
                        targets = [key(s) for s in docs if s["kind"] == "Service"
                                   and matches(sel, s["metadata"]["labels"])]
                    self.assertEqual(len(targets), 1, f"{name}: {key(d)} selects {targets}")

    def test_images_are_the_one_make_image_tags(self):
        # `make image` tags tocsin:<project version>; an overlay's `images:` renames it.
        with open(os.path.join(ROOT, "CMakeLists.txt")) as f:
            version = re.search(r"project\(tocsin VERSION ([0-9.]+)", f.read()).group(1)
        for name in OVERLAYS:
            images = {c["image"] for t in pod_templates(self.docs[name]).values()
                      for c in t["spec"]["containers"]}
            self.assertEqual(images, {f"tocsin:{version}"}, name)

    def test_node_events_role_stays_in_default(self):
        # Node Events go to `default` (kubelet's and node-problem-detector's namespace): a
        # namespace transformer once moved this Role to tocsin, where the agent posts nothing.
        docs = {key(d): d for d in self.docs["prometheus"]}
        role = docs["Role/default/tocsin-agent-events"]
        self.assertEqual(role["rules"], [{"apiGroups": [""], "resources": ["events"],
                                          "verbs": ["create"]}])
        subjects = docs["RoleBinding/default/tocsin-agent-events"]["subjects"]
        self.assertEqual([(s["namespace"], s["name"]) for s in subjects], [SA_AGENT])

    def test_monitors_name_the_jobs_the_alerts_select(self):
        jobs = rule_jobs()
        self.assertEqual(jobs, {"tocsin-agent", "tocsin-controller"})
        docs = self.docs["prometheus-operator"]
        names = set()
        for d in docs:
            if d["kind"] == "PodMonitor":
                label = d["spec"]["jobLabel"]
                for t in pod_templates(docs).values():
                    if matches(d["spec"]["selector"]["matchLabels"], t["metadata"]["labels"]):
                        names.add(t["metadata"]["labels"][label])
            if d["kind"] == "ServiceMonitor":
                label = d["spec"]["jobLabel"]
                for s in docs:
                    if s["kind"] == "Service" and matches(d["spec"]["selector"]["matchLabels"],
                                                          s["metadata"]["labels"]):
                        names.add(s["metadata"]["labels"][label])
        self.assertEqual(names, jobs)

    def test_no_metric_label_is_a_target_label(self):
        # honor_labels keeps tocsin_nccl_process_info's namespace/pod/container; so no tocsin
        # metric may carry `instance` or `job`, which would then replace the target's own.
        with open(os.path.join(ROOT, "docs", "METRICS.md")) as f:
            rows = re.findall(r"^\| `(tocsin_[a-z_]+)` \| [a-z]+ \| ([^|]*)\|", f.read(), re.M)
        self.assertGreater(len(rows), 50)
        for metric, labels in rows:
            names = set(re.findall(r"`([a-z_]+)`", labels))
            self.assertEqual(names & {"instance", "job"}, set(), metric)
        for d in self.docs["prometheus-operator"]:
            if d["kind"] == "PodMonitor":
                self.assertIs(d["spec"]["podMetricsEndpoints"][0]["honorLabels"], True)

    def test_scrape_config_and_rules_pass_promtool(self):
        scrape = next(d for d in self.docs["prometheus"]
                      if key(d) == "ConfigMap/tocsin/tocsin-prometheus-scrape")
        jobs = yaml.safe_load(scrape["data"]["scrape-configs.yaml"])
        self.assertEqual({j["job_name"] for j in jobs}, rule_jobs())
        rules = next(d for d in self.docs["prometheus"] if key(d) == "ConfigMap/tocsin/tocsin-rules")
        tmp = tempfile.mkdtemp(prefix="tocsin-promcfg-")
        try:
            files = []
            for name, text in rules["data"].items():
                with open(os.path.join(tmp, name), "w") as f:
                    f.write(text)
                files.append(name)
            self.assertEqual(len(files), 2)
            # Debian's Prometheus is built without Kubernetes service discovery (its promtool
            # refuses kubernetes_sd_configs): the discovery block is checked against the upstream
            # schema here, and promtool checks the rest with a static target in its place.
            checked = []
            for job in jobs:
                [sd] = job["kubernetes_sd_configs"]
                self.assertEqual(sd["role"], "pod")
                self.assertEqual(sd["namespaces"], {"names": ["tocsin"]})
                self.assertEqual([set(s) for s in sd["selectors"]], [{"role", "label"}])
                self.assertEqual(sd["selectors"][0]["label"], "app.kubernetes.io/name=" +
                                 job["job_name"])
                static = {k: v for k, v in job.items() if k != "kubernetes_sd_configs"}
                static["static_configs"] = [{"targets": ["127.0.0.1:9464"]}]
                checked.append(static)
            with open(os.path.join(tmp, "prometheus.yml"), "w") as f:
                yaml.safe_dump({"rule_files": files, "scrape_configs": checked}, f)
            r = subprocess.run(["promtool", "check", "config", os.path.join(tmp, "prometheus.yml")],
                               capture_output=True, text=True, timeout=60)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            self.assertIn("SUCCESS", r.stdout + r.stderr)
        finally:
            shutil.rmtree(tmp)

    def test_exporter_only_writes_nothing(self):
        docs = self.docs["exporter-only"]
        for d in docs:
            for rule in d.get("rules", []) if d["kind"] in ("Role", "ClusterRole") else []:
                self.assertLessEqual(set(rule["verbs"]), READ_VERBS, f"{key(d)}: {rule}")
        tpl = pod_templates(docs)
        agent = tpl["DaemonSet/tocsin/tocsin-agent"]["spec"]
        self.assertIn("--no-kube", agent["containers"][0]["args"])
        self.assertIs(agent["automountServiceAccountToken"], False)
        controller = tpl["Deployment/tocsin/tocsin-controller"]["spec"]["containers"][0]["args"]
        self.assertIn("--no-events", controller)
        self.assertNotIn("--leader-elect", controller)
        deployment = next(d for d in docs if d["kind"] == "Deployment")
        self.assertEqual(deployment["spec"]["replicas"], 1)

    def test_the_generated_rules_are_up_to_date(self):
        r = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "deploy", "render.py"),
                            "--check"], capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        # And the check is not vacuous: the PrometheusRule holds every alert of both rule files.
        alerts = set()
        for rel in ("agent/alerts.yaml", "controller/alerts.yaml"):
            with open(os.path.join(DEPLOY, rel)) as f:
                for g in yaml.safe_load(f)["groups"]:
                    alerts |= {r["alert"] for r in g["rules"] if "alert" in r}
        rule = next(d for d in self.docs["prometheus-operator"] if d["kind"] == "PrometheusRule")
        shipped = {r["alert"] for g in rule["spec"]["groups"] for r in g["rules"] if "alert" in r}
        self.assertGreater(len(alerts), 10)
        self.assertEqual(shipped, alerts)


RULE_FILES = ("agent", "controller")


class RulesTest(unittest.TestCase):
    """The rule files are the single source: every alert has a severity, fires and stays quiet in
    its promtool test (alerts_test.yaml beside it, run by ctest), and has a runbook section in
    docs/RUNBOOKS.md with its meaning, a `tocsin` command that confirms it, and its fix."""

    @classmethod
    def setUpClass(cls):
        cls.alerts = {}
        for comp in RULE_FILES:
            with open(os.path.join(DEPLOY, comp, "alerts.yaml")) as f:
                cls.alerts[comp] = [r for g in yaml.safe_load(f)["groups"] for r in g["rules"]
                                    if "alert" in r]

    def test_every_alert_fires_and_stays_quiet_in_a_test(self):
        for comp in RULE_FILES:
            tests = []
            # alerts_test.yaml and the generated job_alerts_test.yaml (tools/make_job_fixtures.py)
            for path in sorted(glob.glob(os.path.join(DEPLOY, comp, "*alerts_test.yaml"))):
                with open(path) as f:
                    tests += yaml.safe_load(f)["tests"]
            firing, quiet = set(), set()
            for t in tests:
                for case in t.get("alert_rule_test", []):
                    (firing if case.get("exp_alerts") else quiet).add(case["alertname"])
            names = {r["alert"] for r in self.alerts[comp]}
            self.assertGreater(len(names), 5, comp)
            self.assertEqual(names - firing, set(), f"{comp}: alerts never tested firing")
            self.assertEqual(names - quiet, set(), f"{comp}: alerts never tested quiet")
            self.assertEqual(firing | quiet, names, f"{comp}: tests of alerts that do not exist")
            for r in self.alerts[comp]:
                self.assertIn("severity", r["labels"], r["alert"])

    def test_every_alert_has_a_runbook(self):
        with open(os.path.join(ROOT, "docs", "RUNBOOKS.md")) as f:
            text = f.read()
        sections = dict(re.findall(r"^## (\S+)\n(.*?)(?=^## |\Z)", text, re.M | re.S))
        names = {r["alert"] for comp in RULE_FILES for r in self.alerts[comp]}
        self.assertEqual(set(sections), names, "docs/RUNBOOKS.md sections vs the alerts")
        for name, body in sections.items():
            with self.subTest(alert=name):
                for part in ("**Meaning.**", "**Confirm.**", "**Fix.**"):
                    self.assertIn(part, body)
                confirm = body.split("**Confirm.**")[1].split("**Fix.**")[0]
                self.assertRegex(confirm, r"\b(tocsin [a-z]|tocsin_[a-z])", "a tocsin command")


# The matchers every tocsin series of a dashboard's queries carries: by the scrape job's labels,
# or, on Job fabric (keyed by the training job), by the labels of the tocsin-job records.
MATCHERS = {None: ('cluster=~"$cluster"', 'job=~"$job"', 'node=~"$node"'),
            "tocsin-job-fabric.json": ('namespace=~"$namespace"', 'job_name=~"$job"',
                                       'node=~"$node"')}


class DashboardsTest(unittest.TestCase):
    """The rules of grafana's dashboard-linter, and more: the datasource is a variable that every
    panel and query uses (no hard-coded uid); every query matches cluster, job and node by
    their variables and takes rates over $__rate_interval; every panel has a title, a
    description and a unit; every query parses (promtool) and names only metrics that
    docs/METRICS.md documents; the panels do not overlap; each ships in a ConfigMap that Grafana's
    sidecar loads."""

    @classmethod
    def setUpClass(cls):
        cls.dashboards = {}
        for path in sorted(glob.glob(os.path.join(DEPLOY, "base", "dashboards", "*.json"))):
            with open(path) as f:
                cls.dashboards[os.path.basename(path)] = json.load(f)
        with open(os.path.join(ROOT, "docs", "METRICS.md")) as f:
            cls.documented = set(re.findall(r"^\| `(tocsin[_:][a-z0-9_:]+)`", f.read(), re.M))

    def queries(self):
        for name, d in self.dashboards.items():
            for p in d["panels"]:
                for t in p["targets"]:
                    yield name, p, t

    def test_there_are_dashboards_with_panels(self):
        self.assertEqual(set(self.dashboards), {"tocsin-fleet-fabric.json",
                                                "tocsin-shared-storage.json",
                                                "tocsin-canaries.json",
                                                "tocsin-drift.json",
                                                "tocsin-job-fabric.json"})
        for name, d in self.dashboards.items():
            self.assertGreaterEqual(len(d["panels"]), 5, name)

    def test_variables(self):
        for name, d in self.dashboards.items():
            variables = {v["name"]: v for v in d["templating"]["list"]}
            keys = [m.split("=~")[0] for m in MATCHERS.get(name, MATCHERS[None])]
            keys = ["job" if k == "job_name" else k for k in keys]
            self.assertEqual(set(variables), {"datasource", *keys}, name)
            self.assertEqual((variables["datasource"]["type"], variables["datasource"]["query"]),
                             ("datasource", "prometheus"))
            for v in keys:
                self.assertEqual(variables[v]["datasource"]["uid"], "${datasource}")

    def test_no_hard_coded_datasource(self):
        for name, d in self.dashboards.items():
            uids = re.findall(r'"uid": "([^"]*)"', json.dumps(d, indent=1))
            self.assertEqual(set(uids) - {d["uid"]}, {"${datasource}"}, name)

    def test_every_panel_and_query(self):
        for name, p, t in self.queries():
            with self.subTest(dashboard=name, panel=p["title"]):
                self.assertTrue(p["title"] and p["description"])
                self.assertTrue(p["fieldConfig"]["defaults"].get("unit"))
                self.assertEqual(p["datasource"]["uid"], "${datasource}")
                self.assertEqual(t["datasource"]["uid"], "${datasource}")
                expr = t["expr"]
                # tocsin's series and records, and ALERTS (Job fabric's verdicts firing)
                selectors = re.findall(r"(?:\btocsin[_:][a-z0-9_:]+|\bALERTS)\{([^}]*)\}", expr)
                self.assertTrue(selectors, expr)
                for sel in selectors:
                    for m in MATCHERS.get(name, MATCHERS[None]):
                        self.assertIn(m, sel, expr)
                for window in re.findall(r"\b(?:rate|irate|increase)\([^\[]*\[([^\]]*)\]", expr):
                    self.assertEqual(window, "$__rate_interval", expr)
                for metric in re.findall(r"\b(tocsin[_:][a-z0-9_:]+)\{", expr):
                    base = re.sub(r"_(bucket|sum|count)$", "", metric)
                    self.assertIn(base, self.documented, f"{metric} is not in docs/METRICS.md")

    def test_queries_parse(self):
        rules = []
        for i, (name, p, t) in enumerate(self.queries()):
            expr = (t["expr"].replace("$__rate_interval", "1m").replace("$namespace", ".*")
                    .replace("$cluster", ".*").replace("$job", ".*").replace("$node", ".*"))
            rules.append({"record": f"tocsin:dashboard_query_{i}", "expr": expr})
        self.assertGreater(len(rules), 20)
        tmp = tempfile.mkdtemp(prefix="tocsin-dash-")
        try:
            path = os.path.join(tmp, "queries.yaml")
            with open(path, "w") as f:
                yaml.safe_dump({"groups": [{"name": "dashboards", "rules": rules}]}, f)
            r = subprocess.run(["promtool", "check", "rules", path], capture_output=True,
                               text=True, timeout=60)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        finally:
            shutil.rmtree(tmp)

    def test_panels_do_not_overlap(self):
        for name, d in self.dashboards.items():
            cells = set()
            for p in d["panels"]:
                g = p["gridPos"]
                self.assertLessEqual(g["x"] + g["w"], 24, name)
                for x in range(g["x"], g["x"] + g["w"]):
                    for y in range(g["y"], g["y"] + g["h"]):
                        self.assertNotIn((x, y), cells, f"{name}: {p['title']}")
                        cells.add((x, y))

    def test_shipped_for_the_grafana_sidecar(self):
        docs = {key(d): d for d in render(os.path.join(DEPLOY, "base"))}
        for name, d in self.dashboards.items():
            cm = docs["ConfigMap/tocsin/tocsin-dashboard-" + name[len("tocsin-"):-len(".json")]]
            self.assertEqual(cm["metadata"]["labels"]["grafana_dashboard"], "1")
            self.assertEqual(json.loads(cm["data"][name]), d)


def render_with_component(component):
    """The prometheus overlay with deploy/components/<component> added, rendered."""
    tmp = tempfile.mkdtemp(prefix="tocsin-kust-", dir=DEPLOY)  # kustomize loads below its root
    try:
        rel = os.path.relpath(DEPLOY, tmp)
        with open(os.path.join(tmp, "kustomization.yaml"), "w") as f:
            yaml.safe_dump({"apiVersion": "kustomize.config.k8s.io/v1beta1",
                            "kind": "Kustomization",
                            "resources": [f"{rel}/overlays/prometheus"],
                            "components": [f"{rel}/components/{component}"]}, f)
        return {key(d): d for d in render(tmp)}
    finally:
        shutil.rmtree(tmp)


class ComponentTest(unittest.TestCase):
    def setUp(self):
        self.plain = {key(d): d for d in render(os.path.join(DEPLOY, "overlays", "prometheus"))}

    @staticmethod
    def args(docs):
        return docs["Deployment/tocsin/tocsin-controller"]["spec"]["template"]["spec"][
            "containers"][0]["args"]

    def test_canary_component_adds_the_flag_and_rbac(self):
        with_canary = render_with_component("canary")
        self.assertEqual(set(with_canary) - set(self.plain), {
            "Role/tocsin/tocsin-controller-canary", "RoleBinding/tocsin/tocsin-controller-canary",
            "PriorityClass/tocsin-canary"})
        self.assertEqual(self.args(with_canary), ["controller", "--leader-elect", "--canary"])
        labels = with_canary["Namespace/tocsin"]["metadata"]["labels"]
        self.assertEqual(labels.get("pod-security.kubernetes.io/enforce"), "privileged")
        self.assertEqual(labels.get("app.kubernetes.io/part-of"), "tocsin")

    def test_admission_webhook_component_serves_with_its_secret(self):
        docs = render_with_component("admission-webhook")
        self.assertEqual(set(docs) - set(self.plain), {
            "Service/tocsin/tocsin-controller-admission",
            "ValidatingWebhookConfiguration/tocsin-job-checks"})
        self.assertEqual(self.args(docs), [
            "controller", "--leader-elect", "--admission-listen=0.0.0.0:9443",
            "--tls-cert-file=/etc/tocsin/admission-tls/tls.crt",
            "--tls-private-key-file=/etc/tocsin/admission-tls/tls.key"])
        pod = docs["Deployment/tocsin/tocsin-controller"]["spec"]["template"]["spec"]
        [c] = pod["containers"]
        self.assertIn({"name": "admission", "containerPort": 9443, "protocol": "TCP"}, c["ports"])
        self.assertIn({"name": "metrics", "containerPort": 9465, "protocol": "TCP"}, c["ports"])
        [mount] = c["volumeMounts"]
        self.assertEqual((mount["name"], mount["mountPath"], mount["readOnly"]),
                         ("admission-tls", "/etc/tocsin/admission-tls", True))
        [vol] = pod["volumes"]
        self.assertEqual(vol["secret"]["secretName"], "tocsin-controller-admission-tls")
        # The Service selects the controller's pods on the port the flag listens on.
        svc = docs["Service/tocsin/tocsin-controller-admission"]["spec"]
        labels = docs["Deployment/tocsin/tocsin-controller"]["spec"]["template"]["metadata"][
            "labels"]
        self.assertTrue(set(svc["selector"].items()) <= set(labels.items()))
        self.assertEqual(svc["ports"][0]["targetPort"], 9443)
        [hook] = docs["ValidatingWebhookConfiguration/tocsin-job-checks"]["webhooks"]
        self.assertEqual((hook["failurePolicy"], hook["timeoutSeconds"]), ("Ignore", 2))

    def test_policy_params_component_patches_one_configmap_only(self):
        docs = render_with_component("policy-params")
        self.assertEqual(set(docs) - set(self.plain), {
            "Role/tocsin/tocsin-controller-policy-params",
            "RoleBinding/tocsin/tocsin-controller-policy-params"})
        self.assertEqual(self.args(docs), ["controller", "--leader-elect",
                                           "--policy-params=tocsin/tocsin-policy-params"])
        # The name `tocsin policy` gives its ConfigMap by default, and only patch on it.
        [rule] = docs["Role/tocsin/tocsin-controller-policy-params"]["rules"]
        self.assertEqual(rule, {"apiGroups": [""], "resources": ["configmaps"],
                                "resourceNames": ["tocsin-policy-params"],
                                "verbs": ["patch"]})

    def test_drift_component_mounts_the_baseline_and_grants_the_lists(self):
        docs = render_with_component("drift")
        self.assertEqual(set(docs) - set(self.plain), {
            "ClusterRole/tocsin-controller-drift", "ClusterRoleBinding/tocsin-controller-drift"})
        self.assertEqual(self.args(docs), ["controller", "--leader-elect",
                                           "--drift-baseline=/etc/tocsin/drift/baseline.json"])
        pod = docs["Deployment/tocsin/tocsin-controller"]["spec"]["template"]["spec"]
        [c] = pod["containers"]
        [mount] = c["volumeMounts"]
        self.assertEqual((mount["name"], mount["mountPath"], mount["readOnly"]),
                         ("drift-baseline", "/etc/tocsin/drift", True))
        [vol] = pod["volumes"]
        self.assertEqual(vol["configMap"]["name"], "tocsin-drift-baseline")
        # List only: drift never writes.
        for rule in docs["ClusterRole/tocsin-controller-drift"]["rules"]:
            self.assertEqual(rule["verbs"], ["list"])


if __name__ == "__main__":
    for tool in ("kubectl", "promtool", "node"):
        if shutil.which(tool) is None:
            sys.exit(f"deploy_kustomize_test: needs {tool} (tools/deps.sh installs it)")
    unittest.main()
