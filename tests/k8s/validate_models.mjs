// Validates Kubernetes objects against the schemas of npm's kubernetes-models (the core and
// built-in API groups) and @kubernetes-models/prometheus-operator (monitoring.coreos.com), offline.
//   node tests/k8s/validate_models.mjs < list.json
// stdin: a JSON array of objects, or a List. Prints one line per object ("ok KIND/NAME" or
// "invalid KIND/NAME: why") and exits 1 when any object is invalid or has no schema here.
// The packages come from $TOCSIN_NPM_DIR (default /var/cache/tocsin/npm, filled by tools/deps.sh).
import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";

const npm = (process.env.TOCSIN_NPM_DIR || "/var/cache/tocsin/npm") + "/node_modules/";

function modulePath(apiVersion) {
  const [group, version] = apiVersion.includes("/") ? apiVersion.split("/") : ["", apiVersion];
  if (group === "monitoring.coreos.com") {
    return `${npm}@kubernetes-models/prometheus-operator/${group}/${version}/index.js`;
  }
  return `${npm}kubernetes-models/${group ? group + "/" : ""}${version}/index.js`;
}

const input = JSON.parse(readFileSync(0, "utf8"));
const items = Array.isArray(input) ? input : input.items || [];
if (items.length === 0) {
  console.log("no objects to validate");
  process.exit(1);
}
let bad = 0;
for (const obj of items) {
  const name = `${obj.apiVersion}/${obj.kind}/${obj.metadata && obj.metadata.name}`;
  let mod;
  try {
    mod = await import(pathToFileURL(modulePath(String(obj.apiVersion))).href);
  } catch (e) {
    console.log(`invalid ${name}: no schema for apiVersion ${obj.apiVersion} (${e.code || e.message})`);
    bad++;
    continue;
  }
  const Model = mod[obj.kind];
  if (typeof Model !== "function") {
    console.log(`invalid ${name}: no schema for kind ${obj.kind}`);
    bad++;
    continue;
  }
  try {
    new Model(obj).validate();
    console.log(`ok ${name}`);
  } catch (e) {
    console.log(`invalid ${name}: ${String(e.message).replace(/\s+/g, " ").slice(0, 2000)}`);
    bad++;
  }
}
process.exit(bad ? 1 : 0);
