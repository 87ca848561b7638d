// What the wire test's checks are written with: starting the mock, check()
// and its count, assertions on SDK errors, and small helpers on a sandbox.
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import assert from 'node:assert/strict';
import { LizardError } from '@lizard-build/sdk';

// Starts the mock and reads its announcement (LIZARD_MOCK_* lines) up to the control key.
export function startMock(mockBinary, era, key, project) {
  const child = spawn(mockBinary, ['--api-key', key, '--project', project, '--era', era,
    '--exec-limit-ms', '60000'], { stdio: ['ignore', 'pipe', 'inherit'] });
  return new Promise((resolve, reject) => {
    const fail = (why) => { child.kill('SIGTERM'); reject(new Error(why)); };
    const timer = setTimeout(() => fail('mock did not announce itself in 20 s'), 20000);
    const said = {};
    createInterface({ input: child.stdout }).on('line', (line) => {
      const m = /^LIZARD_MOCK_([A-Z_]+) (.+)$/.exec(line);
      if (!m || (!said.LISTENING && m[1] !== 'LISTENING')) return fail('unexpected line: ' + line);
      said[m[1]] = m[2];
      if (m[1] !== 'CONTROL_KEY') return;
      clearTimeout(timer);
      resolve({ child, url: said.LISTENING, projectId: said.PROJECT_ID });
    });
    child.on('error', (err) => reject(err));
    child.on('exit', (code) => reject(new Error('mock exited early with ' + code)));
  });
}

let passed = 0;
let failed = 0;
export async function check(name, fn) {
  try {
    await fn();
    passed++;
    console.log(`ok   ${name}`);
  } catch (err) {
    failed++;
    console.log(`FAIL ${name}: ${describe(err)}`);
  }
}
// Prints "N passed, N failed"; returns the exit status (1 on any failure).
export function summary() {
  console.log(`${passed} passed, ${failed} failed`);
  return failed === 0 ? 0 : 1;
}
// One line: the message, what an assertion compared, and where in the wire
// test's files it failed (e.g. "platform.mjs:40 < wire.mjs:31").
function describe(err) {
  if (!(err instanceof Error)) return String(err);
  let text = err.message.replace(/\s*\n\s*/g, ' | ').slice(0, 500);
  if (err.code === 'ERR_ASSERTION' && err.operator !== 'fail' && !/actual/.test(text)) {
    const show = (v) => { try { return JSON.stringify(v); } catch { return String(v); } };
    text += ` [actual ${show(err.actual)}, expected ${show(err.expected)}]`;
  }
  const at = [...(err.stack || '').matchAll(/\/wire\/([\w-]+\.mjs):(\d+)/g)].map((m) => `${m[1]}:${m[2]}`);
  return at.length ? `${text} (${at.join(' < ')})` : text;
}
export async function rejects(promise, cls, pred) {
  try {
    await promise;
  } catch (err) {
    assert.ok(err instanceof cls, `expected ${cls.name}, got ${err && err.constructor && err.constructor.name}: ${err && err.message}`);
    if (pred) pred(err);
    return err;
  }
  assert.fail(`expected ${cls.name}, got success`);
}
// A predicate for rejects(): the error's HTTP status and (when given) its code.
export const status = (s, code) => (e) => {
  assert.equal(e.status, s, e.message);
  if (code !== undefined) assert.equal(e.code, code, e.message);
};
export const notImplemented = (p) => rejects(p, LizardError, status(501));
export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
export const out = async (sb, cmd, opts) => (await sb.process.exec(cmd, opts)).stdout;

// Waits until no process of the sandbox matches the (grep -c) pattern; asserts it.
export async function noProcessLeft(sb, pattern) {
  const deadline = Date.now() + 5000;
  let n;
  do {
    n = (await out(sb, `ps -eo args= | grep -c '${pattern}' || true`)).trim();
    if (n === '0') return;
    await sleep(50);
  } while (Date.now() < deadline);
  assert.equal(n, '0', `processes matching ${pattern} are left`);
}

// Runs `cmd` streaming; resolves once its pid event came (firecracker) with {pid, done}.
export async function startStreaming(sb, cmd) {
  let pid;
  const done = sb.process.exec(cmd, { onStdout: () => {}, onPid: (p) => { pid = p; } });
  done.catch(() => {});
  const deadline = Date.now() + 10000;
  while (pid === undefined && Date.now() < deadline) await sleep(20);
  assert.ok(pid, 'got a pid');
  return { pid, done };
}

// All 256 byte values, four times.
export const ALL_BYTES = Uint8Array.from({ length: 1024 }, (_, i) => i % 256);
