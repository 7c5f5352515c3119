#!/usr/bin/env python3
"""deploy/helm/tocsin without helm (which cannot be installed here): the chart uses only the
Go-template actions this test renders itself (tools/deploy/helm.py names them), with Go's
whitespace trimming; with its default values it renders exactly the objects of `kubectl kustomize
deploy/base`; each value does what it says; values.schema.json accepts the defaults and refuses
any other key or type.

    python3 tests/k8s/deploy_helm_test.py -v
"""
import copy
import json
import os
import re
import subprocess
import sys
import unittest

import jsonschema
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CHART = os.path.join(ROOT, "deploy", "helm", "tocsin")
ACTION = re.compile(r"\{\{(-?)\s*(.*?)\s*(-?)\}\}", re.S)
VALUE = re.compile(r"^\.Values((?:\.[A-Za-z][A-Za-z0-9]*)+)$")


class UnsupportedAction(Exception):
    pass


def lookup(values, path):
    v = values
    for key in path.strip(".").split("."):
        if not isinstance(v, dict) or key not in v:
            return None  # Go templates print <no value>; a missing value is an error here
        v = v[key]
    return v


def go_string(v):
    if v is None:
        raise UnsupportedAction("a value the chart's values do not have")
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def render(text, values):
    """The subset of Go's text/template the chart may use: {{ .Values.x }}, {{ if .Values.x }},
    {{ end }} and {{ "{{" }}, each with optional {{- and -}} trimming."""
    out, stack = [], []  # stack: is each enclosing `if` true?
    pos = 0
    for m in ACTION.finditer(text):
        literal = text[pos:m.start()]
        if m.group(1):
            literal = literal.rstrip(" \t\r\n")
        if all(stack):
            out.append(literal)
        pos = m.end()
        if m.group(3):
            while pos < len(text) and text[pos] in " \t\r\n":
                pos += 1
        action = m.group(2)
        if action == '"{{"':
            if all(stack):
                out.append("{{")
        elif action.startswith("if "):
            cond = VALUE.match(action[3:].strip())
            if not cond:
                raise UnsupportedAction(action)
            stack.append(bool(lookup(values, cond.group(1))))
        elif action == "end":
            if not stack:
                raise UnsupportedAction("end without if")
            stack.pop()
        elif VALUE.match(action):
            if all(stack):
                out.append(go_string(lookup(values, VALUE.match(action).group(1))))
        else:
            raise UnsupportedAction(action)
    if stack:
        raise UnsupportedAction("if without end")
    if all(stack):
        out.append(text[pos:])
    return "".join(out)


def render_chart(values):
    objects = []
    folder = os.path.join(CHART, "templates")
    for name in sorted(os.listdir(folder)):
        with open(os.path.join(folder, name)) as f:
            objects += [d for d in yaml.safe_load_all(render(f.read(), values)) if d]
    return objects


def key(obj):
    md = obj["metadata"]
    return (obj["kind"], md.get("namespace", ""), md["name"])


def by_key(objects):
    return {key(o): o for o in objects}


def load_values():
    with open(os.path.join(CHART, "values.yaml")) as f:
        return yaml.safe_load(f)


class RendererTest(unittest.TestCase):
    """The renderer is Go's semantics for the forms it accepts (text/template's documentation)."""

    def test_trimming_and_conditions(self):
        v = {"a": {"on": True, "off": False, "s": "x"}}
        self.assertEqual(render("k: {{ .Values.a.s }}\n", v), "k: x\n")
        self.assertEqual(render("a\n{{- if .Values.a.off }}\nb\n{{- end }}\nc", v), "a\nc")
        self.assertEqual(render("a\n{{- if .Values.a.on }}\nb\n{{- end }}\nc", v), "a\nb\nc")
        self.assertEqual(render("x {{- .Values.a.s -}}  y", v), "xxy")
        self.assertEqual(render('{{ "{{" }}instance}}', v), "{{instance}}")

    def test_refuses_what_it_does_not_know(self):
        for t in ("{{ .Release.Namespace }}", "{{ include \"x\" . }}", "{{ .Values.a | quote }}",
                  "{{ if .Values.a.on }}", "{{ end }}", "{{ .Values.nope }}"):
            with self.assertRaises(UnsupportedAction, msg=t):
                render(t, {"a": {"on": True}})


class ChartTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        out = subprocess.run(["kubectl", "kustomize", os.path.join(ROOT, "deploy", "base")],
                             capture_output=True, text=True, check=True).stdout
        cls.base = [d for d in yaml.safe_load_all(out) if d]
        cls.values = load_values()

    def test_defaults_render_exactly_the_kustomize_base(self):
        chart = by_key(render_chart(self.values))
        base = by_key(self.base)
        self.assertEqual(sorted(chart), sorted(base))
        for k in base:
            self.assertEqual(chart[k], base[k], k)

    def test_every_template_holds_one_object(self):
        folder = os.path.join(CHART, "templates")
        for name in os.listdir(folder):
            with open(os.path.join(folder, name)) as f:
                docs = [d for d in yaml.safe_load_all(render(f.read(), self.values)) if d]
            self.assertEqual(len(docs), 1, name)

    def test_image_names_every_container(self):
        v = copy.deepcopy(self.values)
        v["image"] = {"repository": "registry.example.com/tocsin", "tag": "9.9.9"}
        images = [c["image"] for o in render_chart(v)
                  if o["kind"] in ("Deployment", "DaemonSet")
                  for c in o["spec"]["template"]["spec"]["containers"]]
        self.assertEqual(len(images), 2)
        self.assertEqual(set(images), {"registry.example.com/tocsin:9.9.9"})

    def test_replicas_rules_and_dashboards_switches(self):
        v = copy.deepcopy(self.values)
        v["controller"]["replicas"] = 3
        v["rules"]["enabled"] = False
        v["dashboards"]["enabled"] = False
        objs = by_key(render_chart(v))
        self.assertEqual(objs[("Deployment", "tocsin", "tocsin-controller")]["spec"]["replicas"], 3)
        self.assertNotIn(("ConfigMap", "tocsin", "tocsin-rules"), objs)
        self.assertFalse([k for k, o in objs.items()
                          if o["metadata"].get("labels", {}).get("grafana_dashboard")])
        base_dashboards = [o for o in self.base
                           if o["metadata"].get("labels", {}).get("grafana_dashboard")]
        dashboards = os.listdir(os.path.join(ROOT, "deploy", "base", "dashboards"))
        self.assertEqual(len(base_dashboards), len(dashboards))
        self.assertGreaterEqual(len(dashboards), 5)
        self.assertEqual(len(objs), len(self.base) - 1 - len(base_dashboards))

    def test_grafana_legends_and_rule_annotations_survive(self):
        objs = by_key(render_chart(self.values))
        rules = objs[("ConfigMap", "tocsin", "tocsin-rules")]["data"]
        self.assertIn("{{ $labels.instance }}", rules["tocsin-agent.rules.yaml"])


class SchemaTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        with open(os.path.join(CHART, "values.schema.json")) as f:
            cls.schema = json.load(f)
        cls.values = load_values()

    def test_defaults_valid(self):
        jsonschema.validate(self.values, self.schema)

    def test_strict(self):
        bad = [{"imagee": {}},
               {"image": {"repository": "r", "tag": "t", "pullPolicy": "Always"}},
               {"image": {"repository": "r", "tag": 1}},
               {"controller": {"replicas": 0}},
               {"dashboards": {"enabled": "yes"}}]
        for b in bad:
            v = copy.deepcopy(self.values)
            v.update(b)
            with self.assertRaises(jsonschema.ValidationError, msg=b):
                jsonschema.validate(v, self.schema)

    def test_every_value_is_used_by_a_template(self):
        used = set()
        for name in os.listdir(os.path.join(CHART, "templates")):
            with open(os.path.join(CHART, "templates", name)) as f:
                used |= set(re.findall(r"\.Values((?:\.[A-Za-z0-9]+)+)", f.read()))

        def leaves(d, prefix=""):
            for k, v in d.items():
                if isinstance(v, dict):
                    yield from leaves(v, f"{prefix}.{k}")
                else:
                    yield f"{prefix}.{k}"
        self.assertEqual(set(leaves(self.values)), used)


if __name__ == "__main__":
    unittest.main()
