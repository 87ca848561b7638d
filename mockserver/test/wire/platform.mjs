// The wire test's platform checks, valid in both eras: errors, volumes,
// regions, keys, workspaces and scoped keys.
// `w` is the run's context (wire.mjs): w.s what the checks share (s.sandbox,
// s.projectId, ...), w.lizard the client, w.conn its key and URL.
import assert from 'node:assert/strict';
import { Lizard, Sandbox, LizardError, AuthenticationError, NotFoundError, ConflictError } from '@lizard-build/sdk';
import { rejects, status } from './harness.mjs';

// ---- both eras: errors, volumes, accounts -----------------------------------

export const platformChecks = ({ s, lizard, conn, url, KEY, PROJECT, FC }) => [
  ['a wrong key is AuthenticationError (401)', async () => {
    const bad = new Lizard({ project: PROJECT, apiKey: 'liz_wrong', apiUrl: url });
    await rejects(bad.list(), AuthenticationError, status(401));
    await rejects(Sandbox.connect(s.sandbox.sandboxId, { apiKey: 'liz_wrong', apiUrl: url }), AuthenticationError);
  }],
  ['an unknown project is a clear error', async () => {
    const other = new Lizard({ project: 'no-such-project', ...conn });
    await rejects(other.create('base'), LizardError, (e) => assert.match(e.message, /not found/));
  }],
  ['create without a known template is 400', async () => {
    await rejects(lizard.create('no-such-template'), LizardError, status(400));
  }],
  ['volumes: create, conflict, getOrCreate, list, /workspace persists', async () => {
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
  }],
  [`volume resize: grow; shrink ${FC ? 'is 400 volume_shrink_unsupported' : 'needs 10% free (409 volume_too_full_to_shrink)'}`, async () => {
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
  }],
  ['regions: us-east-1 is the default', async () => {
    const regions = await lizard.regions.list();
    const def = regions.filter((r) => r.isDefault);
    assert.deepEqual(def.map((r) => r.id), ['us-east-1']);
    for (const r of regions) {
      assert.equal(typeof r.name, 'string');
      assert.equal(typeof r.available, 'boolean');
    }
  }],
  ['whoami with a full key: id and username', async () => {
    const me = await lizard.whoami();
    assert.ok(me.id && me.username && me.scoped !== true, JSON.stringify(me));
  }],
  ['apiKeys.create answers {id, name, scopes, key}', async () => {
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
  }],
  ['apiKeys: list shows previews only; create, revoke, and the revoked key is 401 at once', async () => {
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
  }],
  ['workspaces: create (slug), list, find, delete requireEmpty (409) and force', async () => {
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
  }],
  ['scoped keys reach only their scope; whoami says scoped; workspaces list', async () => {
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
  }],
];
