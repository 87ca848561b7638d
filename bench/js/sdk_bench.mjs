// The JavaScript baseline of scripts/bench: the official SDK against the same
// mock, timed inside Node over the same number of iterations as the C++ side.
//
//   node sdk_bench.mjs URL KEY PROJECT ITERATIONS SIZES_MIB [FILE_REPEATS]
//
// Prints one JSON object: {"exec_true": {median_us, p99_us, n},
//                          "write_<N>MiB": {mib_per_s, seconds}, "read_<N>MiB": {...}}
// A file figure is the throughput at the median of FILE_REPEATS writes
// (reads), as lizard-bench reports its own (default 1).
import { Lizard } from '@lizard-build/sdk';

const [url, key, project, iterArg, sizesArg, repeatArg] = process.argv.slice(2);
if (!url || !key || !project) {
  console.error('usage: node sdk_bench.mjs URL KEY PROJECT ITERATIONS SIZES_MIB(comma-separated)');
  process.exit(2);
}
const iterations = Number(iterArg || 200);
const sizes = (sizesArg || '1,8,64').split(',').filter(Boolean).map(Number);
const repeats = Math.max(1, Number(repeatArg || 1));

function percentile(sorted, p) {
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))];
}

// One timed call, sent once more when a reused keep-alive connection turned
// out closed under it (EPIPE, ECONNRESET): the mock closes a connection idle
// for 5 s, and while a 64 MiB body is base64-encoded Node's event loop is
// too busy to retire such a connection in time (undici's 4 s). Only the
// attempt that went through is timed; `out.resent` counts the others.
async function timed(call) {
  for (let attempt = 0; ; attempt++) {
    const t0 = process.hrtime.bigint();
    try {
      const value = await call();
      return { seconds: Number(process.hrtime.bigint() - t0) / 1e9, value };
    } catch (e) {
      const code = e && e.cause && e.cause.code;
      if (attempt > 0 || (code !== 'EPIPE' && code !== 'ECONNRESET' && code !== 'UND_ERR_SOCKET')) throw e;
      out.resent = (out.resent || 0) + 1;
    }
  }
}

const lizard = new Lizard({ project, apiKey: key, apiUrl: url });
const sandbox = await lizard.create('interpreter', { size: 'small', timeoutMs: 3600000 });
const out = {};
try {
  for (let i = 0; i < 10; i++) await sandbox.process.exec(['true']);  // warm up
  const samples = [];
  for (let i = 0; i < iterations; i++) {
    const t0 = process.hrtime.bigint();
    const r = await sandbox.process.exec(['true']);
    samples.push(Number(process.hrtime.bigint() - t0) / 1000);
    if (r.exitCode !== 0) throw new Error('exec true failed');
  }
  samples.sort((a, b) => a - b);
  out.exec_true = { median_us: percentile(samples, 0.5), p99_us: percentile(samples, 0.99), n: samples.length };

  for (const mib of sizes) {
    const bytes = new Uint8Array(mib * 1024 * 1024);
    for (let i = 0; i < bytes.length; i += 4096) bytes[i] = i & 0xff;
    const path = `/workspace/bench-js-${mib}`;
    const writes = [];
    for (let r = 0; r < repeats; r++) {
      writes.push((await timed(() => sandbox.fs.write(path, bytes))).seconds);
    }
    const reads = [];
    for (let r = 0; r < repeats; r++) {
      const { seconds, value: back } = await timed(() => sandbox.fs.readBytes(path));
      reads.push(seconds);
      if (back.length !== bytes.length) throw new Error('short read');
    }
    for (const [kind, times] of [['write', writes], ['read', reads]]) {
      const s = percentile(times.sort((a, b) => a - b), 0.5);
      out[`${kind}_${mib}MiB`] = { mib_per_s: mib / s, seconds: s };
    }
    await sandbox.fs.remove(path);
  }
} finally {
  await sandbox.kill();
}
console.log(JSON.stringify(out));
