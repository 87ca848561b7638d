// The wire test's lifecycle checks: pause, resume, fork, snapshots and
// restore (what each era does), and the kill that ends the run.
// `w` is the run's context (wire.mjs): w.s what the checks share (s.sandbox,
// s.projectId, ...), w.lizard the client, w.conn its key and URL.
import assert from 'node:assert/strict';
import { Sandbox, LizardError, AuthenticationError, NotFoundError, ConflictError } from '@lizard-build/sdk';
import { rejects, status, notImplemented, sleep, out, noProcessLeft, startStreaming } from './harness.mjs';

// ---- pause, resume, fork, snapshots, restore --------------------------------

export const kubernetesLifecycleChecks = ({ s, lizard, conn }) => [
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

export const firecrackerLifecycleChecks = ({ s, lizard, conn }) => [
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

// ---- the end: kill ----------------------------------------------------------

export const killChecks = ({ s }) => [
  ['kill: true, then false (404); later calls are NotFoundError', async () => {
    const sb = s.sandbox;
    assert.equal(await sb.kill(), true);
    assert.equal(await sb.kill(), false);
    await rejects(sb.getInfo(), NotFoundError);
    await rejects(sb.process.exec('true'), NotFoundError);
    await rejects(sb.fs.read('/workspace/wire/c.txt'), NotFoundError);
    await rejects(sb.exposePort(3000), NotFoundError);
    await rejects(sb.unexpose(3000), NotFoundError);
  }],
];
