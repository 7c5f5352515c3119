// Evaluates CEL expressions offline with @bufbuild/cel (the npm package tools/deps.sh installs
// into /var/cache/tocsin/npm, found through NODE_PATH): reads {"expression": ..., "bindings":
// {...}} as JSON on stdin, prints {"value": ...} or {"error": "..."}. JSON objects become CEL
// maps, numbers doubles.
const { run } = require("@bufbuild/cel");

function toCel(v) {
  if (Array.isArray(v)) return v.map(toCel);
  if (v !== null && typeof v === "object") {
    return new Map(Object.entries(v).map(([k, x]) => [k, toCel(x)]));
  }
  return v;
}

let input = "";
process.stdin.setEncoding("utf8");
process.stdin.on("data", (chunk) => (input += chunk));
process.stdin.on("end", () => {
  const { expression, bindings } = JSON.parse(input);
  const vars = {};
  for (const [k, v] of Object.entries(bindings)) vars[k] = toCel(v);
  let out;
  try {
    const value = run(expression, vars);
    out = typeof value === "boolean" || typeof value === "string" || value === null
      ? { value }
      : { error: "not a bool: " + String(value) };
  } catch (e) {
    out = { error: String(e && e.message ? e.message : e) };
  }
  process.stdout.write(JSON.stringify(out));
});
