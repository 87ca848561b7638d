// The wire test's sandbox checks: create, get, list, connect, timeouts (both
// eras), then what each era ignores or applies on exec and files.
// `w` is the run's context (wire.mjs): w.s what the checks share (s.sandbox,
// s.projectId, ...), w.lizard the client, w.conn its key and URL.
import assert from 'node:assert/strict';
import { Sandbox, LizardError, NotFoundError } from '@lizard-build/sdk';
import { rejects, status, notImplemented, out, noProcessLeft, startStreaming, ALL_BYTES } from './harness.mjs';

// ---- both eras: sandboxes --------------------------------------------------

export const sandboxChecks = ({ s, lizard, conn, announcedProjectId }) => [
  ['project resolves by name (GET /api/projects)', async () => {
    s.projectId = await lizard.projectId();
    assert.equal(s.projectId, announcedProjectId);
  }],
  ['create returns SandboxInfo fields', async () => {
    s.sandbox = await lizard.create('interpreter', {
      size: 'small', timeoutMs: 600000, metadata: { run: 'wire' }, envs: { WIRE_VAR: 'wire-value' },
    });
    assert.match(s.sandbox.sandboxId, /\S+/);
  }],
  ['getInfo reflects the create; startedAt and endAt are ISO strings', async () => {
    const info = await s.sandbox.getInfo();
    assert.deepEqual([info.sandboxId, info.template, info.size, info.status, typeof info.endAt],
      [s.sandbox.sandboxId, 'interpreter', 'small', 'running', 'string']);
    assert.ok(Date.parse(info.endAt) > Date.parse(info.startedAt));
  }],
  ['endAt is the string "" for a sandbox without a deadline', async () => {
    const forever = await lizard.create('base', { timeoutMs: 0 });
    const info = await forever.getInfo();
    assert.equal(info.endAt, '');
    const listed = (await lizard.list()).find((x) => x.sandboxId === forever.sandboxId);
    assert.equal(listed.endAt, '');
    await forever.kill();
  }],
  ['list includes the sandbox (global and per project)', async () => {
    assert.ok((await lizard.list()).some((x) => x.sandboxId === s.sandbox.sandboxId));
    const mine = await Sandbox.list({ ...conn, projectId: s.projectId });
    assert.ok(mine.some((x) => x.sandboxId === s.sandbox.sandboxId));
  }],
  ['connect to an existing sandbox', async () => {
    assert.equal((await Sandbox.connect(s.sandbox.sandboxId, conn)).sandboxId, s.sandbox.sandboxId);
  }],
  ['setTimeout accepts 1000..2147483647 and refuses 0', async () => {
    await s.sandbox.setTimeout(900000);
    await rejects(s.sandbox.setTimeout(0), LizardError, status(400));
  }],
];

// ---- kubernetes: what it ignores or does not have --------------------------

export const kubernetesSandboxChecks = ({ s, lizard }) => [
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

export const firecrackerSandboxChecks = ({ s, lizard, ROOT }) => [
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
