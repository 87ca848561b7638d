// The wire test's exec and files checks, valid in both eras.
// `w` is the run's context (wire.mjs): w.s what the checks share (s.sandbox,
// s.projectId, ...), w.lizard the client, w.conn its key and URL.
import assert from 'node:assert/strict';
import { Sandbox, LizardError, NotFoundError } from '@lizard-build/sdk';
import { rejects, status, notImplemented, out, noProcessLeft, ALL_BYTES } from './harness.mjs';

// ---- both eras: exec and files ----------------------------------------------

export const execAndFileChecks = ({ s, conn, url, KEY, FC }) => {
  const sb = s.sandbox;
  return [
    ['exec a shell string: stdout, stderr, exit code', async () => {
      const r = await sb.process.exec('printf out; printf err >&2; exit 7');
      assert.deepEqual([r.stdout, r.stderr, r.exitCode], ['out', 'err', 7]);
    }],
    ['exec an argv runs literally, no shell', async () => {
      const r = await sb.process.exec(['printf', '%s', '$(id) `x` ; && "q"']);
      assert.deepEqual([r.stdout, r.exitCode], ['$(id) `x` ; && "q"', 0]);
    }],
    ['exec of a missing program is exit 127, not an error', async () => {
      assert.equal((await sb.process.exec(['no-such-program-wire'])).exitCode, 127);
    }],
    ['exec timeoutMs: the SDK aborts at the deadline and the server ends the command', async () => {
      // The SDK aborts its own fetch at timeoutMs (AbortSignal.timeout), so it
      // surfaces its TimeoutError rather than the server's answer...
      await rejects(sb.process.exec('sleep 30; echo late > /tmp/late', { timeoutMs: 1000 }), Error,
        (e) => assert.equal(e.name, 'TimeoutError'));
      // ...and the server must have killed the command's group on its side.
      await noProcessLeft(sb, '^sleep 30$');
    }],
    ['exec timeoutMs: the answer the server sends (timedOut, 124, partial output)', async () => {
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
    }],
    ['exec output over 512 KiB is capped with truncated', async () => {
      const r = await sb.process.exec('head -c 700000 /dev/zero | tr "\\0" a');
      assert.equal(r.truncated, true);
      assert.equal(r.stdout.length, 512 * 1024);
    }],
    ['exec output that is not UTF-8 arrives as U+FFFD', async () => {
      assert.equal(await out(sb, "printf 'a\\377b'"), 'a\uFFFDb');
    }],
    ['streaming exec: stdout and stderr lines, exit code', async () => {
      const lines = [];
      const err = [];
      const r = await sb.process.exec('echo one; echo two >&2; echo three; exit 3', {
        onStdout: (l) => lines.push(l), onStderr: (l) => err.push(l),
      });
      assert.deepEqual(lines, ['one', 'three']);
      assert.deepEqual(err, ['two']);
      assert.deepEqual([r.exitCode, r.stdout, r.stderr], [3, 'one\nthree', 'two']);
    }],
    ['fs.write text then fs.read (parents created)', async () => {
      await sb.fs.write('/workspace/wire/a/b/hello.txt', 'héllo\n');
      assert.equal(await sb.fs.read('/workspace/wire/a/b/hello.txt'), 'héllo\n');
    }],
    ['readBytes is exact: all 256 byte values a command wrote', async () => {
      await sb.process.exec(['sh', '-c',
        'b=$(for n in $(seq 0 255); do printf "\\\\%03o" $n; done); for i in 1 2 3 4; do printf "$b"; done > /workspace/wire/bin']);
      assert.deepEqual(Buffer.from(await sb.fs.readBytes('/workspace/wire/bin')), Buffer.from(ALL_BYTES));
    }],
    ['fs.stat reports type, size, mode', async () => {
      const info = await sb.fs.stat('/workspace/wire/bin');
      assert.deepEqual([info.type, info.size, info.name, info.path], ['file', 1024, 'bin', '/workspace/wire/bin']);
      assert.equal(typeof info.mode, 'number');
      assert.equal((await sb.fs.stat('/workspace/wire')).type, 'dir');
    }],
    ['fs.list is one level and names entries', async () => {
      await sb.process.exec('ln -s /workspace/wire/a /workspace/wire/link');
      const list = await sb.fs.list('/workspace/wire');
      assert.deepEqual(list.map((e) => e.name).sort(), ['a', 'bin', 'link']);
      const link = list.find((e) => e.name === 'link');
      assert.equal(link.type, 'symlink');
      assert.equal(link.symlinkTarget, '/workspace/wire/a');
    }],
    ['fs.makeDir (exec mkdir -p) and fs.move', async () => {
      await sb.fs.makeDir('/workspace/wire/made/deep');
      assert.equal((await sb.fs.stat('/workspace/wire/made/deep')).type, 'dir');
      await sb.fs.move('/workspace/wire/bin', '/workspace/wire/moved/bin2');
      assert.equal((await sb.fs.stat('/workspace/wire/moved/bin2')).size, 1024);
      await rejects(sb.fs.stat('/workspace/wire/bin'), NotFoundError);
    }],
    ['fs.remove removes a tree; a missing path is NotFoundError', async () => {
      await sb.fs.remove('/workspace/wire/a');
      await rejects(sb.fs.stat('/workspace/wire/a'), NotFoundError);
      await rejects(sb.fs.read('/workspace/wire/nope'), NotFoundError);
      await rejects(sb.fs.remove('/workspace/wire/nope'), NotFoundError);
    }],
    ['files and commands see the same tree', async () => {
      await sb.process.exec('printf from-cmd > /workspace/wire/c.txt');
      assert.equal(await sb.fs.read('/workspace/wire/c.txt'), 'from-cmd');
    }],
    ['fs.read of a directory is a 400 with code EISDIR', async () => {
      await rejects(sb.fs.read('/workspace/wire'), LizardError, status(400, 'EISDIR'));
    }],
    ['fs.watch answers 501', async () => {
      await notImplemented(sb.fs.watch('/workspace'));
    }],
    ['logs: the generator throws LizardError 501 "Not available yet"; unknown sandbox 404', async () => {
      const drain = async (gen) => { for await (const ev of gen) assert.fail('an event: ' + JSON.stringify(ev)); };
      const e = await notImplemented(drain(sb.logs({ tail: 10 })));
      assert.match(e.message, /Not available yet/);
      const ghost = new Sandbox({ sandboxId: 'sbx_no_such_wire', ...conn });
      await rejects(drain(ghost.logs()), NotFoundError);
    }],
    [`exposePort / getHost / unexpose (${FC ? 'with' : 'without'} accessToken)`, async () => {
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
    }],
  ];
};
