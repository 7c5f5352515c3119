// Evaluates tocsin policy's ValidatingAdmissionPolicies offline with @bufbuild/cel, as the API
// server would: each policy's variables in order (bound as `variables`), then its validation and,
// when that is false, its messageExpression. Reads {"policies": [{"check", "variables": [{name,
// expression}], "expression", "messageExpression"}], "cases": [{"name", "object", "params"}]} on
// stdin; prints {"results": {NAME: {"warnings": [{check, message}], "errors": [...]}}}.
// JSON integers become CEL ints (BigInt) and other numbers doubles, as Kubernetes' CEL sees them.
const { run } = require("@bufbuild/cel");

function toCel(v) {
  if (Array.isArray(v)) return v.map(toCel);
  if (v !== null && typeof v === "object") {
    return new Map(Object.entries(v).map(([k, x]) => [k, toCel(x)]));
  }
  if (typeof v === "number" && Number.isInteger(v)) return BigInt(v);
  return v;
}

function evaluate(policy, object, params) {
  const variables = new Map();
  const bindings = () => ({ object, params, variables });
  for (const v of policy.variables) {
    variables.set(v.name, run(v.expression, bindings()));
  }
  const ok = run(policy.expression, bindings());
  if (typeof ok !== "boolean") throw new Error("validation is not a bool: " + String(ok));
  if (ok) return null;
  const message = run(policy.messageExpression, bindings());
  if (typeof message !== "string") throw new Error("messageExpression is not a string");
  return message;
}

let input = "";
process.stdin.setEncoding("utf8");
process.stdin.on("data", (chunk) => (input += chunk));
process.stdin.on("end", () => {
  const { policies, cases } = JSON.parse(input);
  const results = {};
  for (const c of cases) {
    const object = toCel(c.object);
    const params = toCel(c.params);
    const out = { warnings: [], errors: [] };
    for (const p of policies) {
      try {
        const message = evaluate(p, object, params);
        if (message !== null) out.warnings.push({ check: p.check, message });
      } catch (e) {
        out.errors.push(p.check + ": " + String(e && e.message ? e.message : e));
      }
    }
    results[c.name] = out;
  }
  process.stdout.write(JSON.stringify({ results }));
});
