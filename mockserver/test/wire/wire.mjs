// Wire test: the official JavaScript SDK (@lizard-build/sdk, pinned in
// package-lock.json) drives the standalone mock through every SDK call that
// touches sandboxes, exec (plain and streaming), processes, files and errors.
// If the mock's wire format drifted from the real API's, the SDK would fail here.
//
//   node wire.mjs path/to/lizard-mock
//
// Prints one line per check and ends with "N passed, N failed"; exits 1 on any failure.
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import assert from 'node:assert/strict';
import {
  Lizard, Sandbox, Volume, LizardError, AuthenticationError, NotFoundError, ConflictError,
} from '@lizard-build/sdk';

const mockBinary = process.argv[2];
if (!mockBinary) {
  console.error('usage: node wire.mjs path/to/lizard-mock');
  process.exit(2);
}

const KEY = 'liz_wire_' + Math.random().toString(16).slice(2);
const PROJECT = 'wire-project';

function startMock() {
  const child = spawn(mockBinary, ['--api-key', KEY, '--project', PROJECT, '--exec-limit-ms', '60000'],
    { stdio: ['ignore', 'pipe', 'inherit'] });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('mock did not announce itself in 20 s')), 20000);
    const lines = createInterface({ input: child.stdout });
    let first = true;
    lines.on('line', (line) => {
      if (!first) return;
      first = false;
      clearTimeout(timer);
      const m = /^LIZARD_MOCK_LISTENING (http:\/\/\S+)$/.exec(line);
      if (!m) reject(new Error('unexpected first line: ' + line));
      else resolve({ child, url: m[1] });
    });
    child.on('exit', (code) => reject(new Error('mock exited early with ' + code)));
  });
}

let passed = 0;
let failed = 0;
async function check(name, fn) {
  try {
    await fn();
    passed++;
    console.log(`ok   ${name}`);
  } catch (err) {
    failed++;
    console.log(`FAIL ${name}: ${err && err.stack ? err.stack.split('\n').slice(0, 3).join(' | ') : err}`);
  }
}
async function rejects(promise, cls, pred) {
  try {
    await promise;
  } catch (err) {
    assert.ok(err instanceof cls, `expected ${cls.name}, got ${err && err.constructor && err.constructor.name}: ${err && err.message}`);
    if (pred) pred(err);
    return err;
  }
  assert.fail(`expected ${cls.name}, got success`);
}

const { child, url } = await startMock();
const conn = { apiKey: KEY, apiUrl: url };
const lizard = new Lizard({ project: PROJECT, ...conn });

try {
  let sandbox;
  await check('project resolves by name (GET /api/projects)', async () => {
    const id = await lizard.projectId();
    assert.match(id, /\S+/);
    assert.notEqual(id, PROJECT);
  });

  await check('create returns SandboxInfo fields', async () => {
    sandbox = await lizard.create('interpreter', {
      size: 'small', timeoutMs: 600000, metadata: { run: 'wire' }, envs: { WIRE_VAR: 'wire-value' },
    });
    assert.match(sandbox.sandboxId, /\S+/);
  });

  await check('getInfo reflects the create', async () => {
    const info = await sandbox.getInfo();
    assert.equal(info.sandboxId, sandbox.sandboxId);
    assert.equal(info.template, 'interpreter');
    assert.equal(info.size, 'small');
    assert.equal(info.status, 'running');
    assert.deepEqual(info.metadata, { run: 'wire' });
    assert.ok(Date.parse(info.endAt) > Date.parse(info.startedAt));
  });

  await check('list includes the sandbox (global and per project)', async () => {
    const all = await lizard.list();
    assert.ok(all.some((s) => s.sandboxId === sandbox.sandboxId));
    const projectId = await lizard.projectId();
    const mine = await Sandbox.list({ ...conn, projectId });
    assert.ok(mine.some((s) => s.sandboxId === sandbox.sandboxId));
  });

  await check('connect to an existing sandbox', async () => {
    const again = await Sandbox.connect(sandbox.sandboxId, conn);
    assert.equal(again.sandboxId, sandbox.sandboxId);
  });

  await check('setTimeout accepts 1000..2147483647 and refuses 0', async () => {
    await sandbox.setTimeout(900000);
    await rejects(sandbox.setTimeout(0), LizardError, (e) => assert.equal(e.status, 400));
  });

  await check('exec a shell string: stdout, stderr, exit code', async () => {
    const r = await sandbox.process.exec('printf out; printf err >&2; exit 7');
    assert.deepEqual([r.stdout, r.stderr, r.exitCode], ['out', 'err', 7]);
  });

  await check('exec an argv runs literally, no shell', async () => {
    const r = await sandbox.process.exec(['printf', '%s', '$(id) `x` ; && "q"']);
    assert.equal(r.stdout, '$(id) `x` ; && "q"');
    assert.equal(r.exitCode, 0);
  });

  await check('exec runs as root in /workspace with the create envs', async () => {
    const r = await sandbox.process.exec('id -u; pwd; printf %s "$WIRE_VAR"');
    assert.equal(r.stdout, '0\n/workspace\nwire-value');
  });

  await check('exec envs, workdir per call', async () => {
    const r = await sandbox.process.exec('pwd; printf %s "$X"', { envs: { X: 'y' }, workdir: '/tmp' });
    assert.equal(r.stdout, '/tmp\ny');
  });

  await check('exec of a missing program is exit 127, not an error', async () => {
    const r = await sandbox.process.exec(['no-such-program-wire']);
    assert.equal(r.exitCode, 127);
  });

  await check('exec timeoutMs: the SDK aborts at the deadline and the server ends the command', async () => {
    // The SDK aborts its own fetch at timeoutMs (AbortSignal.timeout), so it
    // surfaces its TimeoutError rather than the server's answer...
    await rejects(sandbox.process.exec('sleep 30; echo late > /tmp/late', { timeoutMs: 1000 }), Error,
      (e) => assert.equal(e.name, 'TimeoutError'));
    // ...and the server must have killed the command's group on its side.
    const deadline = Date.now() + 5000;
    let left;
    do {
      left = await sandbox.process.list();
      if (left.length === 0) break;
      await new Promise((r) => setTimeout(r, 50));
    } while (Date.now() < deadline);
    assert.deepEqual(left, []);
  });

  await check('exec timeoutMs: the answer the server sends (timedOut, 124, partial output)', async () => {
    // The same request the SDK sends, read without the SDK's client-side abort.
    const res = await fetch(`${url}/api/sandboxes/${sandbox.sandboxId}/exec`, {
      method: 'POST',
      headers: { 'X-API-Key': KEY, 'Content-Type': 'application/json' },
      body: JSON.stringify({ cmd: 'printf before; sleep 30', timeoutMs: 1000 }),
    });
    assert.equal(res.status, 200);
    const r = await res.json();
    assert.equal(r.exitCode, 124);
    assert.equal(r.timedOut, true);
    assert.equal(r.stdout, 'before');
  });

  await check('exec output over 512 KiB is capped with truncated', async () => {
    const r = await sandbox.process.exec('head -c 700000 /dev/zero | tr "\\0" a');
    assert.equal(r.truncated, true);
    assert.equal(r.stdout.length, 512 * 1024);
  });

  await check('exec output that is not UTF-8 arrives as U+FFFD', async () => {
    const r = await sandbox.process.exec("printf 'a\\377b'");
    assert.equal(r.stdout, 'a\uFFFDb');
  });

  await check('streaming exec: pid first, lines as they come, exit code', async () => {
    const out = [];
    const err = [];
    let pid;
    const r = await sandbox.process.exec('echo one; echo two >&2; echo three; exit 3', {
      onStdout: (l) => out.push(l), onStderr: (l) => err.push(l), onPid: (p) => { pid = p; },
    });
    assert.ok(Number.isInteger(pid) && pid > 0, 'pid event');
    assert.deepEqual(out, ['one', 'three']);
    assert.deepEqual(err, ['two']);
    assert.equal(r.exitCode, 3);
    assert.equal(r.stdout, 'one\nthree');
  });

  await check('process list shows a running exec, signal ends its group', async () => {
    let pid;
    const running = sandbox.process.exec('sleep 30 & sleep 31; echo done', {
      onStdout: () => {}, onPid: (p) => { pid = p; },
    });
    const deadline = Date.now() + 10000;
    while (pid === undefined && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    assert.ok(pid, 'got a pid');
    const list = await sandbox.process.list();
    const entry = list.find((p) => p.pid === pid);
    assert.ok(entry, 'listed: ' + JSON.stringify(list));
    assert.ok(Array.isArray(entry.cmd));
    await sandbox.process.kill(pid, 'SIGKILL');
    const r = await running;
    assert.equal(r.exitCode, 137);
    const after = await sandbox.process.list();
    assert.ok(!after.some((p) => p.pid === pid));
    const ps = await sandbox.process.exec('ps -eo args= | grep -c "^sleep 3[01]$" || true');
    assert.equal(ps.stdout.trim(), '0', 'the whole group is gone');
  });

  await check('fs.write text then fs.read (parents created)', async () => {
    await sandbox.fs.write('/workspace/wire/a/b/hello.txt', 'héllo\n');
    assert.equal(await sandbox.fs.read('/workspace/wire/a/b/hello.txt'), 'héllo\n');
  });

  await check('fs.write bytes (base64) and readBytes: all 256 values', async () => {
    const bytes = new Uint8Array(256 * 4);
    for (let i = 0; i < bytes.length; i++) bytes[i] = i % 256;
    await sandbox.fs.write('/workspace/wire/bin', bytes);
    const back = await sandbox.fs.readBytes('/workspace/wire/bin');
    assert.deepEqual(Buffer.from(back), Buffer.from(bytes));
    const r = await sandbox.process.exec('wc -c < /workspace/wire/bin');
    assert.equal(r.stdout.trim(), '1024');
  });

  await check('fs.stat reports type, size, mode', async () => {
    const info = await sandbox.fs.stat('/workspace/wire/bin');
    assert.equal(info.type, 'file');
    assert.equal(info.size, 1024);
    assert.equal(info.name, 'bin');
    assert.equal(info.path, '/workspace/wire/bin');
    assert.equal(typeof info.mode, 'number');
    const dir = await sandbox.fs.stat('/workspace/wire');
    assert.equal(dir.type, 'dir');
  });

  await check('fs.list is one level and names entries', async () => {
    await sandbox.process.exec('ln -s /workspace/wire/a /workspace/wire/link');
    const list = await sandbox.fs.list('/workspace/wire');
    const names = list.map((e) => e.name).sort();
    assert.deepEqual(names, ['a', 'bin', 'link']);
    const link = list.find((e) => e.name === 'link');
    assert.equal(link.type, 'symlink');
    assert.equal(link.symlinkTarget, '/workspace/wire/a');
  });

  await check('fs.makeDir (exec mkdir -p) and fs.move', async () => {
    await sandbox.fs.makeDir('/workspace/wire/made/deep');
    assert.equal((await sandbox.fs.stat('/workspace/wire/made/deep')).type, 'dir');
    await sandbox.fs.move('/workspace/wire/bin', '/workspace/wire/moved/bin2');
    assert.equal((await sandbox.fs.stat('/workspace/wire/moved/bin2')).size, 1024);
    await rejects(sandbox.fs.stat('/workspace/wire/bin'), NotFoundError);
  });

  await check('fs.remove removes a tree; a missing path is NotFoundError', async () => {
    await sandbox.fs.remove('/workspace/wire/a');
    await rejects(sandbox.fs.stat('/workspace/wire/a'), NotFoundError);
    await rejects(sandbox.fs.read('/workspace/wire/nope'), NotFoundError);
    await rejects(sandbox.fs.remove('/workspace/wire/nope'), NotFoundError);
  });

  await check('files and commands see the same tree', async () => {
    await sandbox.process.exec('printf from-cmd > /workspace/wire/c.txt');
    assert.equal(await sandbox.fs.read('/workspace/wire/c.txt'), 'from-cmd');
  });

  await check('fs.read of a directory is a 400 with code EISDIR', async () => {
    await rejects(sandbox.fs.read('/workspace/wire'), LizardError, (e) => {
      assert.equal(e.status, 400);
      assert.equal(e.code, 'EISDIR');
    });
  });

  await check('fs.watch answers 501', async () => {
    await rejects(sandbox.fs.watch('/workspace'), LizardError, (e) => assert.equal(e.status, 501));
  });

  await check('pause answers 501 in the kubernetes era', async () => {
    await rejects(sandbox.pause(), LizardError, (e) => assert.equal(e.status, 501));
  });

  await check('a wrong key is AuthenticationError (401)', async () => {
    const bad = new Lizard({ project: PROJECT, apiKey: 'liz_wrong', apiUrl: url });
    await rejects(bad.list(), AuthenticationError, (e) => assert.equal(e.status, 401));
    await rejects(Sandbox.connect(sandbox.sandboxId, { apiKey: 'liz_wrong', apiUrl: url }), AuthenticationError);
  });

  await check('an unknown project is a clear error', async () => {
    const other = new Lizard({ project: 'no-such-project', ...conn });
    await rejects(other.create('base'), LizardError, (e) => assert.match(e.message, /not found/));
  });

  await check('create without a known template is 400', async () => {
    await rejects(lizard.create('no-such-template'), LizardError, (e) => assert.equal(e.status, 400));
  });

  await check('volumes: create, conflict, getOrCreate, list, /workspace persists', async () => {
    const vol = await lizard.volumes.create('wire-vol');
    await rejects(lizard.volumes.create('wire-vol'), ConflictError);
    const same = await lizard.volumes.getOrCreate('wire-vol');
    assert.equal(same.volumeId, vol.volumeId);
    const listed = await lizard.volumes.list();
    assert.ok(listed.some((v) => v.name === 'wire-vol'));
    const s1 = await lizard.create('base', { volumeName: 'wire-vol' });
    await s1.fs.write('/workspace/kept.txt', 'kept');
    await rejects(lizard.create('base', { volumeName: 'wire-vol' }), ConflictError);
    await s1.kill();
    const s2 = await lizard.create('base', { volumeName: 'wire-vol' });
    assert.equal(await s2.fs.read('/workspace/kept.txt'), 'kept');
    await s2.kill();
    await lizard.volumes.delete('wire-vol');
    await rejects(lizard.volumes.get('wire-vol'), NotFoundError);
  });

  await check('workspaces, projects and scoped keys: a scoped key reaches only its scope', async () => {
    const ws = await lizard.workspaces.create({ name: 'wire-ws' });
    assert.match(ws.id, /\S+/);
    const project = await lizard.projects.create({ workspaceId: ws.id, name: 'wire-scoped' });
    assert.match(project.id, /\S+/);
    const minted = await lizard.apiKeys.create({ name: 'wire-scoped-key', projects: [project.id] });
    assert.match(minted.key, /^liz_/);
    const scoped = new Lizard({ project: project.id, apiKey: minted.key, apiUrl: url });
    const mine = await scoped.create('base');
    const visible = (await scoped.list()).map((s) => s.sandboxId);
    assert.deepEqual(visible, [mine.sandboxId], 'sees only its own project');
    await rejects(Sandbox.connect(sandbox.sandboxId, { apiKey: minted.key, apiUrl: url }), NotFoundError);
    await rejects(scoped.billing.subscription(), AuthenticationError, (e) => {
      assert.equal(e.status, 403);
      assert.equal(e.code, 'ACCOUNT_SCOPE_REQUIRED');
    });
    await rejects(scoped.apiKeys.create({ name: 'broader' }), AuthenticationError, (e) => assert.equal(e.status, 403));
    await rejects(scoped.workspaces.create({ name: 'nope' }), AuthenticationError,
      (e) => assert.equal(e.code, 'ACCOUNT_SCOPE_REQUIRED'));
    await mine.kill();
  });

  await check('kill: true, then false (404); later calls are NotFoundError', async () => {
    assert.equal(await sandbox.kill(), true);
    assert.equal(await sandbox.kill(), false);
    await rejects(sandbox.getInfo(), NotFoundError);
    await rejects(sandbox.process.exec('true'), NotFoundError);
    await rejects(sandbox.fs.read('/workspace/wire/c.txt'), NotFoundError);
  });
} finally {
  child.kill('SIGTERM');
}

console.log(`${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
