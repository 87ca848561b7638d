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
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import assert from 'node:assert/strict';
import {
  Lizard, Sandbox, LizardError, AuthenticationError, NotFoundError, ConflictError,
} from '@lizard-build/sdk';

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

// Starts the mock and reads its announcement (LIZARD_MOCK_* lines) up to the control key.
function startMock() {
  const child = spawn(mockBinary, ['--api-key', KEY, '--project', PROJECT, '--era', era,
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

// ---- helpers ---------------------------------------------------------------

let passed = 0;
let failed = 0;
async function check(name, fn) {
  try {
    await fn();
    passed++;
    console.log(`ok   ${name}`);
  } catch (err) {
    failed++;
    console.log(`FAIL ${name}: ${describe(err)}`);
  }
}
// One line: the message, what an assertion compared, and where in this file it failed.
function describe(err) {
  if (!(err instanceof Error)) return String(err);
  let text = err.message.replace(/\s*\n\s*/g, ' | ').slice(0, 500);
  if (err.code === 'ERR_ASSERTION' && err.operator !== 'fail' && !/actual/.test(text)) {
    const show = (v) => { try { return JSON.stringify(v); } catch { return String(v); } };
    text += ` [actual ${show(err.actual)}, expected ${show(err.expected)}]`;
  }
  const at = [...(err.stack || '').matchAll(/wire\.mjs:(\d+)/g)].map((m) => m[1]);
  return at.length ? `${text} (wire.mjs:${at.join(' < ')})` : text;
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
// A predicate for rejects(): the error's HTTP status and (when given) its code.
const status = (s, code) => (e) => {
  assert.equal(e.status, s, e.message);
  if (code !== undefined) assert.equal(e.code, code, e.message);
};
const notImplemented = (p) => rejects(p, LizardError, status(501));
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const out = async (sb, cmd, opts) => (await sb.process.exec(cmd, opts)).stdout;

// Waits until no process of the sandbox matches the (grep -c) pattern; asserts it.
async function noProcessLeft(sb, pattern) {
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
async function startStreaming(sb, cmd) {
  let pid;
  const done = sb.process.exec(cmd, { onStdout: () => {}, onPid: (p) => { pid = p; } });
  done.catch(() => {});
  const deadline = Date.now() + 10000;
  while (pid === undefined && Date.now() < deadline) await sleep(20);
  assert.ok(pid, 'got a pid');
  return { pid, done };
}

// All 256 byte values, four times.
const ALL_BYTES = Uint8Array.from({ length: 1024 }, (_, i) => i % 256);

const { child, url, projectId: announcedProjectId } = await startMock();
const conn = { apiKey: KEY, apiUrl: url };
const lizard = new Lizard({ project: PROJECT, ...conn });
const s = {}; // what the checks share: s.sandbox, s.projectId, ...

// ---- both eras: sandboxes --------------------------------------------------

async function sandboxChecks() {
  await check('project resolves by name (GET /api/projects)', async () => {
    s.projectId = await lizard.projectId();
    assert.equal(s.projectId, announcedProjectId);
  });

  await check('create returns SandboxInfo fields', async () => {
    s.sandbox = await lizard.create('interpreter', {
      size: 'small', timeoutMs: 600000, metadata: { run: 'wire' }, envs: { WIRE_VAR: 'wire-value' },
    });
    assert.match(s.sandbox.sandboxId, /\S+/);
  });

  await check('getInfo reflects the create; startedAt and endAt are ISO strings', async () => {
    const info = await s.sandbox.getInfo();
    assert.deepEqual([info.sandboxId, info.template, info.size, info.status, typeof info.endAt],
      [s.sandbox.sandboxId, 'interpreter', 'small', 'running', 'string']);
    assert.ok(Date.parse(info.endAt) > Date.parse(info.startedAt));
  });

  await check('endAt is the string "" for a sandbox without a deadline', async () => {
    const forever = await lizard.create('base', { timeoutMs: 0 });
    const info = await forever.getInfo();
    assert.equal(info.endAt, '');
    const listed = (await lizard.list()).find((x) => x.sandboxId === forever.sandboxId);
    assert.equal(listed.endAt, '');
    await forever.kill();
  });

  await check('list includes the sandbox (global and per project)', async () => {
    assert.ok((await lizard.list()).some((x) => x.sandboxId === s.sandbox.sandboxId));
    const mine = await Sandbox.list({ ...conn, projectId: s.projectId });
    assert.ok(mine.some((x) => x.sandboxId === s.sandbox.sandboxId));
  });

  await check('connect to an existing sandbox', async () => {
    assert.equal((await Sandbox.connect(s.sandbox.sandboxId, conn)).sandboxId, s.sandbox.sandboxId);
  });

  await check('setTimeout accepts 1000..2147483647 and refuses 0', async () => {
    await s.sandbox.setTimeout(900000);
    await rejects(s.sandbox.setTimeout(0), LizardError, status(400));
  });
}

// ---- kubernetes: what it ignores or does not have --------------------------

const kubernetesSandboxChecks = [
  ['metadata is not kept: get and list return {}', async () => {
    assert.deepEqual((await s.sandbox.getInfo()).metadata, {});
    const listed = (await lizard.list()).find((x) => x.sandboxId === s.sandbox.sandboxId);
    assert.deepEqual(listed.metadata, {});
  }],
  ['exec runs as root in / with only PATH and HOME=/root (create envs ignored)', async () => {
    assert.equal(await out(s.sandbox, 'id -u; pwd'), '0\n/\n');
    const env = (await out(s.sandbox, ['env'])).trim().split('\n').sort();
    assert.deepEqual(env, ['HOME=/root', 'PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin']);
  }],
  ['exec envs, workdir and user are ignored', async () => {
    const r = await s.sandbox.process.exec('pwd; id -u; printf %s "$X"', { envs: { X: 'y' }, workdir: '/tmp', user: 'user' });
    assert.deepEqual([r.stdout, r.exitCode], ['/\n0\n', 0]);
  }],
  ['streaming exec: no pid event even when asked; lines and exit code', async () => {
    const lines = [];
    let pid;
    const r = await s.sandbox.process.exec('echo one; echo two; exit 4', {
      onStdout: (l) => lines.push(l), onPid: (p) => { pid = p; },
    });
    assert.deepEqual([pid, lines, r.exitCode], [undefined, ['one', 'two'], 4]);
  }],
  ['process list and signal answer 501', async () => {
    await notImplemented(s.sandbox.process.list());
    await notImplemented(s.sandbox.process.kill(1, 'SIGTERM'));
  }],
  ['fs.write of bytes that are not UTF-8 is 400 INVALID_UTF8; UTF-8 bytes pass exactly', async () => {
    await rejects(s.sandbox.fs.write('/tmp/wire-bin', ALL_BYTES), LizardError, status(400, 'INVALID_UTF8'));
    await rejects(s.sandbox.fs.stat('/tmp/wire-bin'), NotFoundError);
    const text = Buffer.from('héllo ✓\n', 'utf8');
    await s.sandbox.fs.write('/tmp/wire-utf8', new Uint8Array(text));
    assert.deepEqual(Buffer.from(await s.sandbox.fs.readBytes('/tmp/wire-utf8')), text);
  }],
  ['fs user is ignored: files are written as root', async () => {
    await s.sandbox.fs.write('/tmp/wire-user.txt', 'mine', { user: 'user' });
    assert.equal(await out(s.sandbox, 'stat -c %u /tmp/wire-user.txt'), '0\n');
    assert.equal(await s.sandbox.fs.read('/tmp/wire-user.txt', { user: 'user' }), 'mine');
    await s.sandbox.process.exec('printf s > /tmp/wire-root-only; chmod 600 /tmp/wire-root-only');
    assert.equal(await s.sandbox.fs.read('/tmp/wire-root-only', { user: 'user' }), 's');
    assert.ok(Array.isArray(await s.sandbox.fs.list('/root', { user: 'user' })));
  }],
];

// ---- firecracker: what it applies -------------------------------------------

const firecrackerSandboxChecks = [
  ['metadata comes back on get and list', async () => {
    assert.deepEqual((await s.sandbox.getInfo()).metadata, { run: 'wire' });
    const listed = (await lizard.list()).find((x) => x.sandboxId === s.sandbox.sandboxId);
    assert.deepEqual(listed.metadata, { run: 'wire' });
  }],
  ['exec runs as root in /workspace with the create envs', async () => {
    assert.equal(await out(s.sandbox, 'id -u; pwd; printf %s "$WIRE_VAR"'), '0\n/workspace\nwire-value');
  }],
  ['exec envs on top of the create envs, workdir per call', async () => {
    const r = await s.sandbox.process.exec('pwd; printf %s "$X $WIRE_VAR"', {
      envs: { X: 'y', WIRE_VAR: 'over' }, workdir: '/tmp',
    });
    assert.equal(r.stdout, '/tmp\ny over');
    assert.equal(await out(s.sandbox, 'printf %s "$WIRE_VAR"'), 'wire-value', 'the override was per call');
  }],
  [ROOT ? 'exec user "user" runs as uid 1000' : 'exec user "user" is 400 USER_UNAVAILABLE (mock not root)', async () => {
    const p = s.sandbox.process.exec('id -u; printf %s "$USER"', { user: 'user' });
    if (!ROOT) return rejects(p, LizardError, status(400, 'USER_UNAVAILABLE'));
    assert.equal((await p).stdout, '1000\nuser');
    assert.equal(await out(s.sandbox, 'id -u', { user: 'root' }), '0\n');
  }],
  ['streaming exec with onPid: a pid event, lines as they come, exit code', async () => {
    const lines = [];
    const err = [];
    let pid;
    const r = await s.sandbox.process.exec('echo one; echo two >&2; echo three; exit 3', {
      onStdout: (l) => lines.push(l), onStderr: (l) => err.push(l), onPid: (p) => { pid = p; },
    });
    assert.ok(Number.isInteger(pid) && pid > 0, 'pid event');
    assert.deepEqual([lines, err, r.exitCode, r.stdout], [['one', 'three'], ['two'], 3, 'one\nthree']);
  }],
  ['streaming exec: the pid event comes before any output (50 runs)', async () => {
    for (let i = 0; i < 50; i++) {
      const seen = [];
      await s.sandbox.process.exec('echo one; echo two >&2', {
        onStdout: (l) => seen.push(l), onStderr: (l) => seen.push(l), onPid: () => seen.push('pid'),
      });
      assert.deepEqual(seen[0], 'pid', `run ${i + 1}: ${seen.join(', ')}`);
    }
  }],
  ['process list shows a running exec, signal ends its group', async () => {
    const { pid, done } = await startStreaming(s.sandbox, 'sleep 30 & sleep 31; echo done');
    const entry = (await s.sandbox.process.list()).find((p) => p.pid === pid);
    assert.ok(entry, 'listed');
    assert.ok(Array.isArray(entry.cmd));
    await s.sandbox.process.kill(pid, 'SIGKILL');
    assert.equal((await done).exitCode, 137);
    assert.ok(!(await s.sandbox.process.list()).some((p) => p.pid === pid));
    await noProcessLeft(s.sandbox, '^sleep 3[01]$');
  }],
  ['fs.write bytes (base64) and readBytes: all 256 values stored exactly', async () => {
    await s.sandbox.fs.write('/tmp/wire-bin', ALL_BYTES);
    assert.deepEqual(Buffer.from(await s.sandbox.fs.readBytes('/tmp/wire-bin')), Buffer.from(ALL_BYTES));
    assert.equal(await out(s.sandbox, 'wc -c < /tmp/wire-bin'), '1024\n');
  }],
  [ROOT ? 'fs write/read with user "user": owned by uid 1000, root-only files refused' : 'fs user "user" is 400 USER_UNAVAILABLE (mock not root)', async () => {
    const p = s.sandbox.fs.write('/tmp/wire-user.txt', 'mine', { user: 'user' });
    if (!ROOT) return rejects(p, LizardError, status(400, 'USER_UNAVAILABLE'));
    await p;
    assert.equal(await out(s.sandbox, 'stat -c %u /tmp/wire-user.txt'), '1000\n');
    assert.equal(await s.sandbox.fs.read('/tmp/wire-user.txt', { user: 'user' }), 'mine');
    await s.sandbox.process.exec('printf s > /tmp/wire-root-only; chmod 600 /tmp/wire-root-only');
    await rejects(s.sandbox.fs.read('/tmp/wire-root-only', { user: 'user' }), LizardError, status(400, 'EACCES'));
    assert.equal(await s.sandbox.fs.read('/tmp/wire-root-only'), 's');
    await rejects(s.sandbox.fs.list('/root', { user: 'user' }), LizardError, status(400, 'EACCES'));
  }],
  [ROOT ? 'fs.remove with user "user" cannot remove a file in a directory of root (EACCES)' : 'fs.remove with user "user" is 400 USER_UNAVAILABLE (mock not root)', async () => {
    await s.sandbox.process.exec('mkdir -p /workspace/wire-root-dir && printf r > /workspace/wire-root-dir/f');
    const p = s.sandbox.fs.remove('/workspace/wire-root-dir/f', { user: 'user' });
    await rejects(p, LizardError, status(400, ROOT ? 'EACCES' : 'USER_UNAVAILABLE'));
    assert.equal(await s.sandbox.fs.read('/workspace/wire-root-dir/f'), 'r');
  }],
];

// ---- both eras: exec and files ----------------------------------------------

async function execAndFileChecks() {
  const sb = s.sandbox;
  await check('exec a shell string: stdout, stderr, exit code', async () => {
    const r = await sb.process.exec('printf out; printf err >&2; exit 7');
    assert.deepEqual([r.stdout, r.stderr, r.exitCode], ['out', 'err', 7]);
  });

  await check('exec an argv runs literally, no shell', async () => {
    const r = await sb.process.exec(['printf', '%s', '$(id) `x` ; && "q"']);
    assert.deepEqual([r.stdout, r.exitCode], ['$(id) `x` ; && "q"', 0]);
  });

  await check('exec of a missing program is exit 127, not an error', async () => {
    assert.equal((await sb.process.exec(['no-such-program-wire'])).exitCode, 127);
  });

  await check('exec timeoutMs: the SDK aborts at the deadline and the server ends the command', async () => {
    // The SDK aborts its own fetch at timeoutMs (AbortSignal.timeout), so it
    // surfaces its TimeoutError rather than the server's answer...
    await rejects(sb.process.exec('sleep 30; echo late > /tmp/late', { timeoutMs: 1000 }), Error,
      (e) => assert.equal(e.name, 'TimeoutError'));
    // ...and the server must have killed the command's group on its side.
    await noProcessLeft(sb, '^sleep 30$');
  });

  await check('exec timeoutMs: the answer the server sends (timedOut, 124, partial output)', async () => {
    // Raw fetch: the same request the SDK sends, read without the SDK's client-side abort
    // (no SDK call can see this answer).
    const res = await fetch(`${url}/api/sandboxes/${sb.sandboxId}/exec`, {
      method: 'POST',
      headers: { 'X-API-Key': KEY, 'Content-Type': 'application/json' },
      body: JSON.stringify({ cmd: 'printf before; sleep 30', timeoutMs: 1000 }),
    });
    assert.equal(res.status, 200);
    const r = await res.json();
    assert.deepEqual([r.exitCode, r.timedOut, r.stdout], [124, true, 'before']);
  });

  await check('exec output over 512 KiB is capped with truncated', async () => {
    const r = await sb.process.exec('head -c 700000 /dev/zero | tr "\\0" a');
    assert.equal(r.truncated, true);
    assert.equal(r.stdout.length, 512 * 1024);
  });

  await check('exec output that is not UTF-8 arrives as U+FFFD', async () => {
    assert.equal(await out(sb, "printf 'a\\377b'"), 'a\uFFFDb');
  });

  await check('streaming exec: stdout and stderr lines, exit code', async () => {
    const lines = [];
    const err = [];
    const r = await sb.process.exec('echo one; echo two >&2; echo three; exit 3', {
      onStdout: (l) => lines.push(l), onStderr: (l) => err.push(l),
    });
    assert.deepEqual(lines, ['one', 'three']);
    assert.deepEqual(err, ['two']);
    assert.deepEqual([r.exitCode, r.stdout, r.stderr], [3, 'one\nthree', 'two']);
  });

  await check('fs.write text then fs.read (parents created)', async () => {
    await sb.fs.write('/workspace/wire/a/b/hello.txt', 'héllo\n');
    assert.equal(await sb.fs.read('/workspace/wire/a/b/hello.txt'), 'héllo\n');
  });

  await check('readBytes is exact: all 256 byte values a command wrote', async () => {
    await sb.process.exec(['sh', '-c',
      'b=$(for n in $(seq 0 255); do printf "\\\\%03o" $n; done); for i in 1 2 3 4; do printf "$b"; done > /workspace/wire/bin']);
    assert.deepEqual(Buffer.from(await sb.fs.readBytes('/workspace/wire/bin')), Buffer.from(ALL_BYTES));
  });

  await check('fs.stat reports type, size, mode', async () => {
    const info = await sb.fs.stat('/workspace/wire/bin');
    assert.deepEqual([info.type, info.size, info.name, info.path], ['file', 1024, 'bin', '/workspace/wire/bin']);
    assert.equal(typeof info.mode, 'number');
    assert.equal((await sb.fs.stat('/workspace/wire')).type, 'dir');
  });

  await check('fs.list is one level and names entries', async () => {
    await sb.process.exec('ln -s /workspace/wire/a /workspace/wire/link');
    const list = await sb.fs.list('/workspace/wire');
    assert.deepEqual(list.map((e) => e.name).sort(), ['a', 'bin', 'link']);
    const link = list.find((e) => e.name === 'link');
    assert.equal(link.type, 'symlink');
    assert.equal(link.symlinkTarget, '/workspace/wire/a');
  });

  await check('fs.makeDir (exec mkdir -p) and fs.move', async () => {
    await sb.fs.makeDir('/workspace/wire/made/deep');
    assert.equal((await sb.fs.stat('/workspace/wire/made/deep')).type, 'dir');
    await sb.fs.move('/workspace/wire/bin', '/workspace/wire/moved/bin2');
    assert.equal((await sb.fs.stat('/workspace/wire/moved/bin2')).size, 1024);
    await rejects(sb.fs.stat('/workspace/wire/bin'), NotFoundError);
  });

  await check('fs.remove removes a tree; a missing path is NotFoundError', async () => {
    await sb.fs.remove('/workspace/wire/a');
    await rejects(sb.fs.stat('/workspace/wire/a'), NotFoundError);
    await rejects(sb.fs.read('/workspace/wire/nope'), NotFoundError);
    await rejects(sb.fs.remove('/workspace/wire/nope'), NotFoundError);
  });

  await check('files and commands see the same tree', async () => {
    await sb.process.exec('printf from-cmd > /workspace/wire/c.txt');
    assert.equal(await sb.fs.read('/workspace/wire/c.txt'), 'from-cmd');
  });

  await check('fs.read of a directory is a 400 with code EISDIR', async () => {
    await rejects(sb.fs.read('/workspace/wire'), LizardError, status(400, 'EISDIR'));
  });

  await check('fs.watch answers 501', async () => {
    await notImplemented(sb.fs.watch('/workspace'));
  });

  await check('logs: the generator throws LizardError 501 "Not available yet"; unknown sandbox 404', async () => {
    const drain = async (gen) => { for await (const ev of gen) assert.fail('an event: ' + JSON.stringify(ev)); };
    const e = await notImplemented(drain(sb.logs({ tail: 10 })));
    assert.match(e.message, /Not available yet/);
    const ghost = new Sandbox({ sandboxId: 'sbx_no_such_wire', ...conn });
    await rejects(drain(ghost.logs()), NotFoundError);
  });

  await check(`exposePort / getHost / unexpose (${FC ? 'with' : 'without'} accessToken)`, async () => {
    const exposed = await sb.exposePort(3000);
    assert.deepEqual([exposed.hostname, exposed.port], [`${sb.sandboxId}-3000.sandbox.us-east-1.onlizard.com`, 3000]);
    assert.ok(exposed.url.includes(exposed.hostname));
    if (FC) {
      assert.match(exposed.accessToken, /\S+/);
      assert.equal(sb.accessToken, exposed.accessToken);
    } else {
      assert.equal(exposed.accessToken, undefined);
      assert.equal(sb.accessToken, undefined);
    }
    assert.equal(await sb.getHost(8080), `${sb.sandboxId}-8080.sandbox.us-east-1.onlizard.com`);
    await sb.unexpose(3000);
    await sb.unexpose(8080);
  });
}

// ---- both eras: errors, volumes, accounts -----------------------------------

async function platformChecks() {
  await check('a wrong key is AuthenticationError (401)', async () => {
    const bad = new Lizard({ project: PROJECT, apiKey: 'liz_wrong', apiUrl: url });
    await rejects(bad.list(), AuthenticationError, status(401));
    await rejects(Sandbox.connect(s.sandbox.sandboxId, { apiKey: 'liz_wrong', apiUrl: url }), AuthenticationError);
  });

  await check('an unknown project is a clear error', async () => {
    const other = new Lizard({ project: 'no-such-project', ...conn });
    await rejects(other.create('base'), LizardError, (e) => assert.match(e.message, /not found/));
  });

  await check('create without a known template is 400', async () => {
    await rejects(lizard.create('no-such-template'), LizardError, status(400));
  });

  await check('volumes: create, conflict, getOrCreate, list, /workspace persists', async () => {
    const vol = await lizard.volumes.create('wire-vol');
    await rejects(lizard.volumes.create('wire-vol'), ConflictError);
    assert.equal((await lizard.volumes.getOrCreate('wire-vol')).volumeId, vol.volumeId);
    assert.ok((await lizard.volumes.list()).some((v) => v.name === 'wire-vol'));
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

  await check(`volume resize: grow; shrink ${FC ? 'is 400 volume_shrink_unsupported' : 'needs 10% free (409 volume_too_full_to_shrink)'}`, async () => {
    const vol = await lizard.volumes.create('wire-resize', { sizeGb: 5 });
    assert.equal((await vol.resize(s.projectId, 8)).sizeGb, 8);
    assert.equal((await lizard.volumes.resize('wire-resize', 9)).sizeGb, 9);
    await rejects(vol.resize(s.projectId, 0), LizardError, status(400, 'invalid_volume_size'));
    await rejects(lizard.volumes.resize('no-such-volume', 9), NotFoundError);
    if (FC) {
      const e = await rejects(vol.resize(s.projectId, 6), LizardError, status(400, 'volume_shrink_unsupported'));
      assert.ok(!(e instanceof ConflictError));
      assert.equal((await vol.getInfo(s.projectId)).sizeGb, 9);
    } else {
      assert.equal((await vol.resize(s.projectId, 6)).sizeGb, 6);
      const writer = await lizard.create('base', { volumeName: 'wire-resize' });
      // A sparse 950 MiB file: more than 90% of 1 GiB, less than 90% of 2 GiB.
      assert.equal((await writer.process.exec('truncate -s 950M /workspace/big')).exitCode, 0);
      await writer.kill();
      await rejects(vol.resize(s.projectId, 1), ConflictError, status(409, 'volume_too_full_to_shrink'));
      assert.equal((await vol.resize(s.projectId, 2)).sizeGb, 2);
    }
    await lizard.volumes.delete('wire-resize');
  });

  await check('regions: us-east-1 is the default', async () => {
    const regions = await lizard.regions.list();
    const def = regions.filter((r) => r.isDefault);
    assert.deepEqual(def.map((r) => r.id), ['us-east-1']);
    for (const r of regions) {
      assert.equal(typeof r.name, 'string');
      assert.equal(typeof r.available, 'boolean');
    }
  });

  await check('whoami with a full key: id and username', async () => {
    const me = await lizard.whoami();
    assert.ok(me.id && me.username && me.scoped !== true, JSON.stringify(me));
  });

  await check('apiKeys.create answers {id, name, scopes, key}', async () => {
    const full = await lizard.apiKeys.create({ name: 'wire-shape' });
    const scoped = await lizard.apiKeys.create({ name: 'wire-shape-scoped', projects: [s.projectId] });
    await lizard.apiKeys.delete(full.id);
    await lizard.apiKeys.delete(scoped.id);
    for (const k of [full, scoped]) {
      assert.match(k.id, /\S+/);
      assert.match(k.key, /^liz_/);
    }
    assert.equal(full.name, 'wire-shape');
    assert.deepEqual(full.scopes, [], 'a full key: scopes []');
    assert.deepEqual(scoped.scopes, [{ type: 'project', id: s.projectId }]);
  });

  await check('apiKeys: list shows previews only; create, revoke, and the revoked key is 401 at once', async () => {
    const minted = await lizard.apiKeys.create({ name: 'wire-full-key' });
    assert.match(minted.key, /^liz_/);
    const other = new Lizard({ apiKey: minted.key, apiUrl: url });
    assert.match((await other.whoami()).id, /\S+/);
    const list = await lizard.apiKeys.list();
    const entry = list.find((k) => k.id === minted.id);
    assert.deepEqual([entry?.name, entry?.scopes], ['wire-full-key', []]);
    for (const k of list) {
      assert.match(k.keyPreview, /\S+/);
      assert.equal(k.key, undefined);
    }
    const text = JSON.stringify(list);
    assert.ok(!text.includes(minted.key) && !text.includes(KEY), 'a full key in the list');
    await lizard.apiKeys.delete(minted.id);
    await rejects(other.whoami(), AuthenticationError, status(401));
    assert.ok(!(await lizard.apiKeys.list()).some((k) => k.id === minted.id));
    await rejects(lizard.apiKeys.delete(minted.id), NotFoundError);
  });

  await check('workspaces: create (slug), list, find, delete requireEmpty (409) and force', async () => {
    const ws = await lizard.workspaces.create({ name: 'Wire Delete Me' });
    assert.match(ws.id, /\S+/);
    assert.match(ws.slug, /\S+/);
    assert.ok((await lizard.workspaces.list()).some((w) => w.id === ws.id));
    for (const ref of [ws.id, ws.slug, ws.name]) assert.equal((await lizard.workspaces.find(ref))?.id, ws.id, ref);
    assert.equal(await lizard.workspaces.find('no-such-workspace-wire'), null);
    const project = await lizard.projects.create({ workspaceId: ws.id, name: 'wire-doomed' });
    await rejects(lizard.workspaces.delete(ws.id), ConflictError, status(409, 'WORKSPACE_NOT_EMPTY'));
    assert.ok(await lizard.workspaces.find(ws.id), 'still there after the refused delete');
    await lizard.workspaces.delete(ws.id, { force: true });
    assert.equal(await lizard.workspaces.find(ws.id), null);
    assert.ok(!(await lizard.projects.list()).some((p) => p.id === project.id), 'its project went with it');
    const empty = await lizard.workspaces.create({ name: 'wire-empty' });
    await lizard.workspaces.delete(empty.id);
    assert.equal(await lizard.workspaces.find(empty.id), null);
    await rejects(lizard.workspaces.delete(empty.id), NotFoundError);
  });

  await check('scoped keys reach only their scope; whoami says scoped; workspaces list', async () => {
    const ws = await lizard.workspaces.create({ name: 'wire-ws' });
    const project = await lizard.projects.create({ workspaceId: ws.id, name: 'wire-scoped' });
    assert.match(project.id, /\S+/);
    const minted = await lizard.apiKeys.create({ name: 'wire-scoped-key', projects: [project.id] });
    assert.match(minted.key, /^liz_/);
    const scoped = new Lizard({ project: project.id, apiKey: minted.key, apiUrl: url });
    const me = await scoped.whoami();
    assert.deepEqual([me.scoped, me.id, me.username], [true, undefined, undefined]);
    assert.deepEqual(me.scopes.map((x) => [x.type, x.id]), [['project', project.id]]);
    const mine = await scoped.create('base');
    assert.deepEqual((await scoped.list()).map((x) => x.sandboxId), [mine.sandboxId], 'sees only its own project');
    await rejects(Sandbox.connect(s.sandbox.sandboxId, { apiKey: minted.key, apiUrl: url }), NotFoundError);
    await rejects(scoped.billing.subscription(), AuthenticationError, status(403, 'ACCOUNT_SCOPE_REQUIRED'));
    await rejects(scoped.apiKeys.create({ name: 'broader' }), AuthenticationError, status(403));
    await rejects(scoped.workspaces.create({ name: 'nope' }), AuthenticationError, status(403, 'ACCOUNT_SCOPE_REQUIRED'));
    await rejects(scoped.workspaces.delete(ws.id), AuthenticationError, status(403, 'ACCOUNT_SCOPE_REQUIRED'));
    const wsKey = await lizard.apiKeys.create({ name: 'wire-ws-key', workspaces: [ws.id] });
    const wsScoped = new Lizard({ apiKey: wsKey.key, apiUrl: url });
    assert.deepEqual((await wsScoped.workspaces.list()).map((w) => w.id), [ws.id], 'a scoped key sees only its own');
    await mine.kill();
    await lizard.apiKeys.delete(minted.id);
    await lizard.apiKeys.delete(wsKey.id);
    await lizard.workspaces.delete(ws.id, { force: true });
  });
}

// ---- pause, resume, fork, snapshots, restore --------------------------------

const kubernetesLifecycleChecks = [
  ['pause and resume answer 501', async () => {
    await notImplemented(s.sandbox.pause());
    await notImplemented(s.sandbox.resume());
    assert.equal((await s.sandbox.getInfo()).status, 'running');
  }],
  ['fork answers 501', async () => {
    await notImplemented(s.sandbox.fork({ count: 1 }));
  }],
  ['snapshot answers 501; snapshot lists are []; an id is 404', async () => {
    await notImplemented(s.sandbox.snapshot('wire-snap'));
    assert.deepEqual(await Sandbox.snapshots(s.projectId, conn), []);
    assert.deepEqual(await Sandbox.mySnapshots(conn), []);
    await rejects(Sandbox.getSnapshot('snap_no_such_wire', conn), NotFoundError);
    await rejects(Sandbox.deleteSnapshot('snap_no_such_wire', conn), NotFoundError);
    await rejects(Sandbox.setSnapshotWarmPool('snap_no_such_wire', 1, conn), NotFoundError);
  }],
  ['create with a snapshotId (restore) answers 501', async () => {
    await notImplemented(lizard.create('base', { snapshotId: 'snap_no_such_wire' }));
  }],
];

const firecrackerLifecycleChecks = [
  ['pause keeps files and ends processes; resume boots fresh (waitForStatus)', async () => {
    const sb = await lizard.create('base', { timeoutMs: 600000 });
    await sb.fs.write('/workspace/kept.txt', 'kept');
    const { pid, done } = await startStreaming(sb, 'sleep 300');
    assert.ok((await sb.process.list()).some((p) => p.pid === pid));
    assert.equal(await sb.pause(), true);
    assert.equal((await sb.waitForStatus('paused', { waitTimeoutMs: 20000 })).status, 'paused');
    await Promise.race([done.catch(() => {}), sleep(10000).then(() => assert.fail('the exec outlived the pause'))]);
    assert.equal(await sb.resume(), true);
    assert.equal((await sb.waitForStatus('running', { waitTimeoutMs: 20000 })).status, 'running');
    assert.deepEqual(await sb.process.list(), []);
    await noProcessLeft(sb, '^sleep 300$');
    assert.equal(await sb.fs.read('/workspace/kept.txt'), 'kept');
    assert.equal(await out(sb, 'cat /workspace/kept.txt'), 'kept');
    await sb.kill();
    assert.equal(await sb.pause(), false, 'pause of a gone sandbox');
    assert.equal(await sb.resume(), false, 'resume of a gone sandbox');
  }],
  ['fork: one {sandbox} per copy, files copied, copies independent', async () => {
    await s.sandbox.fs.write('/workspace/fork.txt', 'before');
    const forks = await s.sandbox.fork({ count: 2, timeoutMs: 600000 });
    assert.equal(forks.length, 2);
    const ids = new Set([s.sandbox.sandboxId]);
    for (const f of forks) {
      assert.ok(f.sandbox, 'a sandbox, not ' + f.error);
      assert.equal(f.info.sandboxId, f.sandbox.sandboxId);
      ids.add(f.sandbox.sandboxId);
      assert.equal(await f.sandbox.fs.read('/workspace/fork.txt'), 'before');
      assert.equal((await f.sandbox.getInfo()).status, 'running');
    }
    assert.equal(ids.size, 3);
    await forks[0].sandbox.fs.write('/workspace/fork.txt', 'changed');
    assert.equal(await s.sandbox.fs.read('/workspace/fork.txt'), 'before');
    assert.equal(await forks[1].sandbox.fs.read('/workspace/fork.txt'), 'before');
    for (const f of forks) await f.sandbox.kill();
    await rejects(s.sandbox.fork({ count: 11 }), LizardError, status(400));
  }],
  ['fork of a sandbox with a volume attached is ConflictError (409)', async () => {
    await lizard.volumes.create('wire-fork-vol');
    const sb = await lizard.create('base', { volumeName: 'wire-fork-vol' });
    await rejects(sb.fork(), ConflictError, status(409));
    await sb.kill();
    await lizard.volumes.delete('wire-fork-vol');
  }],
  ['snapshots: snapshot, waitForSnapshot, get, list, pool size, restore, scope, delete', async () => {
    await s.sandbox.fs.write('/workspace/snap.txt', 'snapped');
    const snap = await s.sandbox.snapshot('wire-snap'); // the SDK sends poolSize 5
    assert.deepEqual([snap.name, snap.projectId, snap.sourceSandboxId, snap.status, snap.poolSize, snap.readyCount],
      ['wire-snap', s.projectId, s.sandbox.sandboxId, 'ready', 0, 1]);
    const started = Date.now();
    assert.equal((await Sandbox.waitForSnapshot(snap.id, { ...conn, waitTimeoutMs: 10000 })).id, snap.id);
    assert.ok(Date.now() - started < 900, 'ready at the first poll');
    assert.equal((await Sandbox.getSnapshot(snap.id, conn)).name, 'wire-snap');
    assert.ok((await Sandbox.snapshots(s.projectId, conn)).some((x) => x.id === snap.id));
    assert.ok((await Sandbox.mySnapshots(conn)).some((x) => x.id === snap.id));
    const pooled = await Sandbox.setSnapshotWarmPool(snap.id, 3, conn);
    assert.ok(pooled.poolSize === 3 && pooled.readyCount >= 3, JSON.stringify(pooled));
    await Sandbox.waitForSnapshot(snap.id, { ...conn, waitTimeoutMs: 10000 });
    await s.sandbox.fs.write('/workspace/snap.txt', 'after the snapshot');
    const restored = await Sandbox.restore(snap.id, { ...conn, timeoutMs: 600000 });
    assert.notEqual(restored.sandboxId, s.sandbox.sandboxId);
    assert.equal((await restored.getInfo()).projectId, s.projectId);
    assert.equal(await restored.fs.read('/workspace/snap.txt'), 'snapped');
    await restored.kill();
    const wsId = (await lizard.projects.get(s.projectId)).workspaceId;
    const elsewhere = await lizard.projects.create({ workspaceId: wsId, name: 'wire-elsewhere' });
    await rejects(Sandbox.restore(snap.id, { ...conn, projectId: elsewhere.id }), AuthenticationError,
      status(403, 'SNAPSHOT_SCOPE'));
    await Sandbox.deleteSnapshot(snap.id, conn);
    await rejects(Sandbox.getSnapshot(snap.id, conn), NotFoundError);
    assert.ok(!(await Sandbox.snapshots(s.projectId, conn)).some((x) => x.id === snap.id));
    await rejects(Sandbox.restore(snap.id, conn), NotFoundError);
  }],
];

// ---- run -------------------------------------------------------------------

try {
  await sandboxChecks();
  for (const [name, fn] of FC ? firecrackerSandboxChecks : kubernetesSandboxChecks) await check(name, fn);
  await execAndFileChecks();
  await platformChecks();
  for (const [name, fn] of FC ? firecrackerLifecycleChecks : kubernetesLifecycleChecks) await check(name, fn);

  await check('kill: true, then false (404); later calls are NotFoundError', async () => {
    const sb = s.sandbox;
    assert.equal(await sb.kill(), true);
    assert.equal(await sb.kill(), false);
    await rejects(sb.getInfo(), NotFoundError);
    await rejects(sb.process.exec('true'), NotFoundError);
    await rejects(sb.fs.read('/workspace/wire/c.txt'), NotFoundError);
    await rejects(sb.exposePort(3000), NotFoundError);
    await rejects(sb.unexpose(3000), NotFoundError);
  });
} finally {
  child.kill('SIGTERM');
}

console.log(`${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
