// Runs the conformance suite on this example and keeps README.md true.
//
//   node run-suite.mjs LIZARD_CONFORMANCE [--era kubernetes|firecracker] [--update-readme]
//
// Runs `LIZARD_CONFORMANCE --backend command --check-protocol [--era E] --
// node adapter.mjs` (every message checked against the protocol's schemas;
// the runner starts the embedded mock for each rule), prints the runner's
// output, and then either writes the verdicts into README.md's report for
// that era (--update-readme) or fails (exit 1) when README.md records other
// verdicts than this run got: the failures listed there are the real ones.
// The runner itself failing to run (exit 2) fails too.
import { spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const here = dirname(fileURLToPath(import.meta.url))
const readmePath = join(here, 'README.md')
const args = process.argv.slice(2)
const runner = args[0]
if (!runner) {
  console.error('usage: node run-suite.mjs LIZARD_CONFORMANCE [--era E] [--update-readme]')
  process.exit(2)
}
const era = args.includes('--era') ? args[args.indexOf('--era') + 1] : 'kubernetes'
const update = args.includes('--update-readme')
const begin = `<!-- report:${era}:begin (node run-suite.mjs --update-readme writes this table) -->`
const end = `<!-- report:${era}:end -->`

const tmp = mkdtempSync(join(tmpdir(), 'node-sdk-suite-'))
const reportPath = join(tmp, 'report.json')
const run = spawnSync(runner, ['--backend', 'command', '--check-protocol', '--era', era,
  '--jobs', '4', '--report-json', reportPath, '--', process.execPath, join(here, 'adapter.mjs')],
{ stdio: 'inherit' })
if (run.status !== 0 && run.status !== 1) {
  console.error(`the runner could not run the suite (status ${run.status})`)
  process.exit(1)
}
const report = JSON.parse(readFileSync(reportPath, 'utf8'))
rmSync(tmp, { recursive: true, force: true })

let readme = readFileSync(readmePath, 'utf8')
const start = readme.indexOf(begin)
const stop = readme.indexOf(end)
if (start < 0 || stop < start) {
  console.error(`README.md has no report markers for the ${era} era`)
  process.exit(1)
}
if (update) {
  const { pass, fail, skip } = report.summary
  const rows = report.rules.map((r) =>
    `| \`${r.id}\` | ${r.status} | ${r.reason.replaceAll('|', '\\|')} |`)
  const table = [`${pass} pass, ${fail} fail, ${skip} skip (suite ${report.suite_version}, ${era} era).`,
    '', '| rule | result | reason |', '|---|---|---|', ...rows].join('\n')
  readme = readme.slice(0, start) + begin + '\n\n' + table + '\n\n' + readme.slice(stop)
  writeFileSync(readmePath, readme)
  console.log(`README.md updated (${era} era)`)
  process.exit(0)
}
const recorded = new Map()
for (const line of readme.slice(start, stop).split('\n')) {
  const cells = line.split(' | ')
  if (line.startsWith('| `') && cells.length >= 3) recorded.set(cells[0].slice(3, -1), cells[1])
}
let differences = 0
for (const r of report.rules) {
  if (recorded.get(r.id) !== r.status) {
    console.log(`README.md records ${r.id}: ${recorded.get(r.id) ?? 'nothing'}, this run: ${r.status} ${r.reason}`)
    differences++
  }
}
if (differences > 0 || recorded.size !== report.rules.length) {
  console.error("README.md's report is not this run's; rerun with --update-readme and explain the change")
  process.exit(1)
}
console.log(`the verdicts match README.md's report (${era} era)`)
