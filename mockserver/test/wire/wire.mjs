// Wire test: the official JavaScript SDK (@lizard-build/sdk, pinned in
// package-lock.json) drives the standalone mock through every SDK call that
// touches sandboxes, exec (plain and streaming), processes, files, volumes,
// snapshots and the platform routes, in one era of the platform. If the mock's
// wire format drifted from the real API's, the SDK would fail here.
//
//   node wire.mjs path/to/lizard-mock kubernetes|firecracker
//
// Starts the mock with `--era <era>`, runs the checks valid in both eras and
// those of that era (spec: docs/spec/lizard-api.md, "Eras" and "Platform routes").
// Prints one line per check and ends with "N passed, N failed"; exits 1 on any failure.
//
// The checks live in modules by area, in the order they run: sandboxes.mjs,
// exec_and_files.mjs, platform.mjs, lifecycle.mjs. Each exports lists of
// [name, check] rows made from the run's context; harness.mjs holds check()
// and the helpers the rows share.
import { Lizard } from '@lizard-build/sdk';
import { check, startMock, summary } from './harness.mjs';
import { sandboxChecks, kubernetesSandboxChecks, firecrackerSandboxChecks } from './sandboxes.mjs';
import { execAndFileChecks } from './exec_and_files.mjs';
import { platformChecks } from './platform.mjs';
import { kubernetesLifecycleChecks, firecrackerLifecycleChecks, killChecks } from './lifecycle.mjs';

const [mockBinary, era] = process.argv.slice(2);
if (!mockBinary || !['kubernetes', 'firecracker'].includes(era)) {
  console.error('usage: node wire.mjs path/to/lizard-mock kubernetes|firecracker');
  process.exit(2);
}
const FC = era === 'firecracker';
// The mock runs as this process's user; as root its sandboxes have the account "user" (uid 1000).
const ROOT = process.getuid() === 0;

const KEY = 'liz_wire_' + Math.random().toString(16).slice(2);
const PROJECT = 'wire-project';

const { child, url, projectId: announcedProjectId } = await startMock(mockBinary, era, KEY, PROJECT);
const conn = { apiKey: KEY, apiUrl: url };
const lizard = new Lizard({ project: PROJECT, ...conn });
// What every check module is handed; s is what the checks share: s.sandbox, s.projectId, ...
const w = { FC, ROOT, KEY, PROJECT, url, announcedProjectId, conn, lizard, s: {} };

const run = async (checks) => { for (const [name, fn] of checks) await check(name, fn); };
try {
  await run(sandboxChecks(w));
  await run((FC ? firecrackerSandboxChecks : kubernetesSandboxChecks)(w));
  await run(execAndFileChecks(w));
  await run(platformChecks(w));
  await run((FC ? firecrackerLifecycleChecks : kubernetesLifecycleChecks)(w));
  await run(killChecks(w));
} finally {
  child.kill('SIGTERM');
}

process.exit(summary());
