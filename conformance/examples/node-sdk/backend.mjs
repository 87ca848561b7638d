// A workspace backend on the official Lizard SDK (@lizard-build/sdk), written
// the way the SDK's README shows: one sandbox per workspace, created on first
// use; commands through `sandbox.process.exec`, files through `sandbox.fs.*`.
// Nothing here knows the conformance suite; adapter.mjs serves it to the
// suite over the backend protocol.
//
//   const ws = new SdkWorkspace({ project: 'my-project' })
//   const { exitCode, stdout } = await ws.run('python -c "print(2 ** 10)"')
//   await ws.writeBytes('/workspace/notes.txt', Buffer.from('text'))
//   await ws.destroy()
import { AuthenticationError, Lizard, NotFoundError, Sandbox } from '@lizard-build/sdk'

export const WORKING_DIR = '/workspace'

// Errors a caller can tell apart; `kind` names the contract's error kind.
export class WorkspaceError extends Error {
  constructor (message, kind = 'workspace', extra = {}) {
    super(message)
    this.kind = kind
    Object.assign(this, extra)
  }
}

// A path error with its POSIX name (ENOENT, EISDIR, ...).
export class PathError extends Error {
  constructor (message, errno, path) {
    super(message)
    this.errno = errno
    this.path = path
  }
}

export class InvalidArgument extends Error {}

function checkPath (path) {
  if (typeof path !== 'string' || !path.startsWith('/')) {
    throw new InvalidArgument(`paths must be absolute: ${path}`)
  }
}

// What the SDK threw, as one of ours.
function translate (e, path) {
  if (e instanceof WorkspaceError || e instanceof PathError || e instanceof InvalidArgument) return e
  const code = typeof e?.code === 'string' ? e.code : ''
  if (/^E[A-Z0-9]+$/.test(code)) return new PathError(e.message, code, path)
  if (e instanceof AuthenticationError) return new WorkspaceError(e.message, 'authentication')
  if (e instanceof NotFoundError) return new WorkspaceError(e.message, 'unavailable')
  if (e?.name === 'TimeoutError' || e?.name === 'AbortError') {
    return new WorkspaceError(e.message, 'timeout', { stdout: '', stderr: '' })
  }
  if (e?.status === 501) return new WorkspaceError(e.message, 'not_supported')
  if (e?.status === 429 || e?.status >= 500) {
    return new WorkspaceError(e.message, 'transient', { admitted: false, status: e.status })
  }
  if (e instanceof TypeError) {
    // fetch failed: the request may or may not have reached the server.
    return new WorkspaceError(e.message, 'transient', { admitted: true })
  }
  return new WorkspaceError(e?.message ?? String(e))
}

export class SdkWorkspace {
  #options
  #lizard
  #sandbox = null // a promise, so concurrent first uses share one create
  #id
  #destroyed = false

  // apiKey and apiUrl default to LIZARD_API_KEY and LIZARD_API_URL (the SDK
  // reads them); sandboxId attaches to an existing sandbox instead of
  // creating one.
  constructor ({ apiKey, apiUrl, project, size, timeoutMs, envs = {}, sandboxId } = {}) {
    this.#options = { apiKey, apiUrl, size, timeoutMs, envs }
    this.#lizard = new Lizard({ apiKey, apiUrl, project })
    this.#id = sandboxId
  }

  // {provider, id} once the sandbox exists, else null.
  get ref () {
    return this.#id ? { provider: 'lizard', id: this.#id } : null
  }

  get workingDir () {
    return WORKING_DIR
  }

  #connection () {
    const { apiKey, apiUrl } = this.#options
    return { apiKey, apiUrl }
  }

  async #get () {
    if (this.#destroyed) throw new WorkspaceError('the workspace was destroyed', 'unavailable')
    if (!this.#sandbox) {
      if (this.#id) {
        this.#sandbox = Sandbox.connect(this.#id, this.#connection())
      } else {
        const { size, timeoutMs, envs } = this.#options
        // The template with Python and its data stack (the SDK's "Run Python").
        this.#sandbox = this.#lizard.create('interpreter', { size, timeoutMs, envs })
          .then((sandbox) => {
            this.#id = sandbox.sandboxId
            return sandbox
          })
      }
    }
    try {
      return await this.#sandbox
    } catch (e) {
      throw translate(e)
    }
  }

  // cmd: a shell string or an argv array. timeout in seconds; signal an
  // AbortSignal that stops waiting for the command.
  async run (cmd, { env = {}, timeout, signal } = {}) {
    if (timeout !== undefined && !(Number.isFinite(timeout) && timeout > 0)) {
      throw new InvalidArgument(`the timeout must be positive and finite, not ${timeout}`)
    }
    if (Array.isArray(cmd) && cmd.length === 0) throw new InvalidArgument('an empty argv')
    const sandbox = await this.#get()
    const exec = sandbox.process.exec(cmd, {
      workdir: WORKING_DIR,
      envs: env,
      timeoutMs: timeout === undefined ? undefined : Math.ceil(timeout * 1000)
    })
    const cancelled = new Promise((resolve, reject) => {
      if (signal?.aborted) reject(new WorkspaceError('cancelled', 'cancelled'))
      signal?.addEventListener('abort', () => reject(new WorkspaceError('cancelled', 'cancelled')))
    })
    try {
      const result = await Promise.race([exec, cancelled])
      return { exitCode: result.exitCode, stdout: result.stdout, stderr: result.stderr }
    } catch (e) {
      throw Object.assign(translate(e), e?.name === 'TimeoutError' ? { timeout } : {})
    }
  }

  async #files (path, call) {
    checkPath(path)
    const sandbox = await this.#get()
    try {
      return await call(sandbox.fs)
    } catch (e) {
      throw translate(e, path)
    }
  }

  async readBytes (path) {
    return Buffer.from(await this.#files(path, (fs) => fs.readBytes(path)))
  }

  async writeBytes (path, data) {
    await this.#files(path, (fs) => fs.write(path, data))
  }

  async stat (path) {
    return entry(await this.#files(path, (fs) => fs.stat(path)))
  }

  async listDir (path) {
    const items = await this.#files(path, (fs) => fs.list(path))
    return items.map(entry).sort((a, b) => Buffer.compare(Buffer.from(a.name), Buffer.from(b.name)))
  }

  async makeDir (path) {
    await this.#files(path, (fs) => fs.makeDir(path))
  }

  async remove (path) {
    checkPath(path)
    const target = normalize(path)
    if (target === '/' || WORKING_DIR === target || WORKING_DIR.startsWith(target + '/')) {
      throw new InvalidArgument(`refusing to remove the working directory or an ancestor: ${path}`)
    }
    await this.#files(path, (fs) => fs.remove(path))
  }

  async exists (path) {
    try {
      await this.stat(path)
      return true
    } catch (e) {
      if (e instanceof PathError && e.errno === 'ENOENT') return false
      throw e
    }
  }

  // No SDK call resolves links; realpath -m inside the sandbox does.
  async realpath (path) {
    checkPath(path)
    const { exitCode, stdout, stderr } = await this.run(['realpath', '-m', '--', path])
    if (exitCode !== 0) throw new PathError(stderr.trim(), 'EINVAL', path)
    return stdout.replace(/\n$/, '')
  }

  async destroy () {
    if (this.#destroyed) return
    this.#destroyed = true
    if (!this.#id && !this.#sandbox) return
    try {
      const sandbox = this.#id ? new Sandbox({ sandboxId: this.#id, ...this.#connection() }) : await this.#sandbox
      await sandbox.kill(this.#connection())
    } catch (e) {
      if (!(e instanceof NotFoundError)) throw translate(e)
    }
  }
}

function entry (info) {
  const isDir = info.type === 'dir'
  return { name: info.name, path: info.path, isDir, size: isDir ? undefined : info.size }
}

function normalize (path) {
  const parts = []
  for (const part of path.split('/')) {
    if (part === '..') parts.pop()
    else if (part && part !== '.') parts.push(part)
  }
  return '/' + parts.join('/')
}
