// Serves backend.mjs's SdkWorkspace over the backend protocol
// (docs/protocol.md): JSON-RPC 2.0 on stdin and stdout, one message per line.
//
//   lizard-conformance --backend command -- node conformance/examples/node-sdk/adapter.mjs
//
// It says it is a Lizard backend (profile "lizard"), so the runner starts an
// embedded mock of the Lizard API for each rule and passes LIZARD_API_URL,
// LIZARD_API_KEY and LIZARD_PROJECT_ID, as a user's own run would.
// Requests are handled as they come (several in flight); $/cancelRequest
// aborts a run.
import { createInterface } from 'node:readline'

import { InvalidArgument, PathError, SdkWorkspace, WorkspaceError } from './backend.mjs'

const PROTOCOL_VERSION = '1'

const utf8 = new TextDecoder('utf-8', { fatal: true })

// Text is a string, or {b64} for bytes that are not UTF-8, which the SDK
// (JSON bodies) cannot carry: those are invalid arguments here.
function textIn (value) {
  if (typeof value === 'string') return value
  try {
    return utf8.decode(Buffer.from(value.b64, 'base64'))
  } catch {
    throw new InvalidArgument('this backend carries UTF-8 text only')
  }
}

const bytesOut = (data) => Buffer.from(data ?? '').toString('base64')

function errorOut (e) {
  let data = { kind: 'error' }
  if (e instanceof InvalidArgument) {
    data = { kind: 'invalid_argument' }
  } else if (e instanceof PathError) {
    data = { kind: 'path', errno: e.errno }
    if (e.path !== undefined) data.path = e.path
  } else if (e instanceof WorkspaceError) {
    data = { kind: e.kind }
    if (e.kind === 'timeout') Object.assign(data, { out: bytesOut(e.stdout), err: bytesOut(e.stderr), timeout: e.timeout ?? 0 })
    if (e.kind === 'transient') {
      data.may_have_been_admitted = e.admitted
      if (e.status) data.http_status = e.status
    }
  }
  return { code: -32000, message: e?.message || String(e), data }
}

const entryOut = ({ name, path, isDir, size }) =>
  size === undefined ? { name, path, is_dir: isDir } : { name, path, is_dir: isDir, size }

const backends = new Map()
const runs = new Map() // request id -> AbortController
let nextHandle = 1

function options (overrides = {}) {
  return {
    project: process.env.LIZARD_PROJECT_ID,
    size: overrides.size,
    timeoutMs: overrides.lifetime_ms,
    envs: overrides.env ? Object.fromEntries(overrides.env.map(([n, v]) => [textIn(n), textIn(v)])) : undefined,
    apiKey: overrides.api_key,
    sandboxId: overrides.ref ? textIn(overrides.ref.id) : undefined
  }
}

function add (workspace) {
  const handle = nextHandle++
  backends.set(handle, workspace)
  return { backend: handle, working_dir: workspace.workingDir }
}

function backend (params) {
  const workspace = backends.get(params.backend)
  if (!workspace) throw Object.assign(new Error(`no backend ${params.backend}`), { rpc: -32602 })
  return workspace
}

const methods = {
  initialize: () => ({
    protocol_version: PROTOCOL_VERSION,
    name: 'SdkWorkspace (Node, @lizard-build/sdk)',
    profile: 'lizard',
    capabilities: ['commands', 'filesystem', 'realpath'],
    deviations: { commands_run_as_root: true, commands_have_own_filesystem: true },
    can_attach: true
  }),
  '$/ping': () => null,
  'backend/new': (p) => add(new SdkWorkspace(options(p.overrides))),
  'backend/attach': (p) => add(new SdkWorkspace({ ...options(), sandboxId: textIn(p.ref.id) })),
  'backend/ref': (p) => ({ ref: backend(p).ref }),
  'backend/destroy': async (p) => { await backend(p).destroy(); return null },
  'backend/drop': (p) => { backends.delete(p.backend); return null },
  'environment/destroy': async (p) => {
    await new SdkWorkspace({ ...options(), sandboxId: textIn(p.ref.id) }).destroy()
    return null
  },
  run: async (p, id) => {
    const controller = new AbortController()
    runs.set(id, controller)
    try {
      const cmd = p.command.argv ? p.command.argv.map(textIn) : textIn(p.command.shell)
      const env = Object.fromEntries((p.env ?? []).map(([n, v]) => [textIn(n), textIn(v)]))
      let timeout = p.timeout
      if (typeof timeout === 'string') timeout = Number(timeout) // "NaN", "Infinity", "-Infinity"
      const r = await backend(p).run(cmd, { env, timeout, signal: controller.signal })
      return { exit_code: r.exitCode, out: bytesOut(r.stdout), err: bytesOut(r.stderr) }
    } finally {
      runs.delete(id)
    }
  },
  'fs/read': async (p) => ({ data: bytesOut(await backend(p).readBytes(textIn(p.path))) }),
  'fs/write': async (p) => {
    await backend(p).writeBytes(textIn(p.path), Buffer.from(p.data, 'base64'))
    return null
  },
  'fs/stat': async (p) => entryOut(await backend(p).stat(textIn(p.path))),
  'fs/list': async (p) => ({ entries: (await backend(p).listDir(textIn(p.path))).map(entryOut) }),
  'fs/make_dir': async (p) => { await backend(p).makeDir(textIn(p.path)); return null },
  'fs/remove': async (p) => { await backend(p).remove(textIn(p.path)); return null },
  'fs/exists': async (p) => ({ exists: await backend(p).exists(textIn(p.path)) }),
  'fs/realpath': async (p) => ({ path: await backend(p).realpath(textIn(p.path)) })
}

const send = (message) => process.stdout.write(JSON.stringify(message) + '\n')

async function answer (request) {
  const { id, method, params = {} } = request
  const handler = methods[method]
  if (!handler) {
    send({ jsonrpc: '2.0', id, error: { code: -32601, message: `no method ${method}` } })
    return
  }
  try {
    send({ jsonrpc: '2.0', id, result: await handler(params, id) })
  } catch (e) {
    const error = e?.rpc ? { code: e.rpc, message: e.message } : errorOut(e)
    send({ jsonrpc: '2.0', id, error })
  }
}

const pending = new Set()
const lines = createInterface({ input: process.stdin, crlfDelay: Infinity })
lines.on('line', (line) => {
  if (!line.trim()) return
  let request
  try {
    request = JSON.parse(line)
  } catch {
    send({ jsonrpc: '2.0', id: null, error: { code: -32700, message: 'not JSON' } })
    return
  }
  if (request.id === undefined) {
    if (request.method === '$/cancelRequest') runs.get(request.params?.id)?.abort()
    return
  }
  const done = answer(request)
  pending.add(done)
  done.finally(() => pending.delete(done))
})
lines.on('close', async () => {
  for (const controller of runs.values()) controller.abort()
  await Promise.allSettled([...pending])
  process.exit(0)
})
