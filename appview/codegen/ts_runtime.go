package codegen

// tsRuntime is the fixed part of the TypeScript module: the shared
// types and the client machinery the generated methods call.
const tsRuntime = `
/** A value with its ` + "`$type`" + ` set: a union's member. */
export type $Typed<V, T extends string = string> = V & { $type: T }

/** Bytes in atproto's JSON form: base64, unpadded. */
export interface Bytes {
  $bytes: string
}

/** A CID link in atproto's JSON form. */
export interface CidLink {
  $link: string
}

/** A blob reference, as records hold it. */
export interface BlobRef {
  $type: 'blob'
  ref: CidLink
  mimeType: string
  size: number
  /** Added by Lexview to the blobs of served records: the blob at the author's PDS. */
  url?: string
}

/** A label Lexview serves beside records (com.atproto.label.defs#label, without its signature). */
export interface Label {
  ver?: number
  src: string
  uri: string
  cid?: string
  val: string
  neg?: boolean
  cts: string
  exp?: string
}

/** A served record of a collection the app has no lexicon of. */
export interface UnknownServedRecord {
  $type: string
  uri: string
  cid: string
  [field: string]: unknown
}

/** The answer of a procedure Lexview writes to the caller's PDS itself (no script): the PDS's. */
export interface WriteOutput {
  uri: string
  cid: string
  commit?: { cid: string; rev: string }
  validationStatus?: string
  [field: string]: unknown
}

/** The body of a procedure whose input is not JSON. */
export type BinaryInput = Blob | ArrayBuffer | Uint8Array | string

/** A request about to be sent, for AuthHook to sign. */
export interface XRPCRequest {
  method: 'GET' | 'POST'
  /** The full URL, query included. A DPoP proof's htu is it without the query. */
  url: string
  /** Set Authorization and DPoP here. */
  headers: Headers
}

/**
 * Signs a request: sets its Authorization (and DPoP proof) headers. The
 * client calls it before every request when set, queries included (their
 * user authentication is optional: return without setting anything to
 * call a query anonymously). Procedures need it. The client does not
 * implement OAuth: the app signs in its user (docs/oauth.md) and makes a
 * fresh proof per request.
 */
export type AuthHook = (req: XRPCRequest) => void | Promise<void>

export interface ClientOptions {
  /** The instance's URL, for example https://appview.example.com. */
  baseUrl: string
  /** The API client key (hvc_...), sent as X-Client-Key on every call. */
  clientKey: string
  auth?: AuthHook | undefined
  /** Defaults to the global fetch. */
  fetch?: typeof fetch | undefined
  /** Headers sent on every call. */
  headers?: Record<string, string> | undefined
}

export interface CallOptions {
  signal?: AbortSignal | undefined
  headers?: Record<string, string> | undefined
  /** The Content-Type of a binary input; default the method's encoding. */
  encoding?: string | undefined
}

/**
 * An error answer: a status other than 2xx, or a 200 whose JSON body
 * names one of the method's declared errors (a Lexview script cannot set
 * the status: it answers ` + "`{error, message}`" + `).
 */
export class XRPCError extends Error {
  /** The HTTP status. */
  readonly status: number
  /** The body's error (an error name, or Lexview's description). */
  readonly error: string
  /** The decoded body. */
  readonly body: unknown
  constructor(status: number, error: string, message: string | undefined, body: unknown) {
    super(message || error)
    this.name = 'XRPCError'
    this.status = status
    this.error = error
    this.body = body
  }
}

function errorOf(status: number, body: unknown): XRPCError {
  const o = isObject(body) ? body : {}
  const error = typeof o['error'] === 'string' ? o['error'] : 'HTTP ' + status
  const message = typeof o['message'] === 'string' ? o['message'] : typeof body === 'string' ? body : undefined
  return new XRPCError(status, error, message, body)
}

function isObject(v: unknown): v is { [key: string]: unknown } {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
}

/** Whether v's $type is id (a main definition's also as id#main). */
export function isTyped(v: unknown, id: string): boolean {
  if (!isObject(v)) return false
  const t = v['$type']
  return t === id || (!id.includes('#') && t === id + '#main')
}

/**
 * Pages through a query: calls it with params, then with each answer's
 * cursor until an answer has none, yielding every answer.
 */
export async function* paginate<P extends { cursor?: string }, O extends { cursor?: string }>(
  call: (params: P) => Promise<O>,
  params: P,
): AsyncGenerator<O, void, undefined> {
  let p = params
  for (;;) {
    const page = await call(p)
    yield page
    if (!page.cursor) return
    if (page.cursor === p.cursor) throw new Error('paginate: the cursor did not advance')
    p = { ...p, cursor: page.cursor }
  }
}

interface Call {
  method: 'GET' | 'POST'
  params?: object | undefined
  input?: unknown
  encoding?: string | undefined
  binaryOutput?: boolean
  errors: (e: XRPCError) => XRPCError
  declared: readonly string[]
  opts?: CallOptions | undefined
}

export class BaseClient {
  readonly baseUrl: string
  readonly clientKey: string
  readonly auth: AuthHook | undefined
  readonly headers: Record<string, string>
  private readonly fetchFn: typeof fetch

  constructor(opts: ClientOptions) {
    this.baseUrl = opts.baseUrl.replace(/\/+$/, '')
    this.clientKey = opts.clientKey
    this.auth = opts.auth
    this.headers = opts.headers ?? {}
    this.fetchFn = opts.fetch ?? ((input, init) => fetch(input, init))
  }

  /** Calls the method nsid; the generated methods call it with their types. */
  protected async call(nsid: string, c: Call): Promise<unknown> {
    const url = new URL(this.baseUrl + '/xrpc/' + nsid)
    for (const [name, v] of Object.entries(c.params ?? {})) {
      if (v === undefined || v === null) continue
      if (Array.isArray(v)) for (const x of v) url.searchParams.append(name, String(x))
      else url.searchParams.set(name, String(v))
    }
    const headers = new Headers({ ...this.headers, ...(c.opts?.headers ?? {}) })
    headers.set('X-Client-Key', this.clientKey)
    let body: BodyInit | undefined
    if (c.input !== undefined) {
      if (c.encoding === undefined || c.encoding === 'application/json') {
        headers.set('Content-Type', 'application/json')
        body = JSON.stringify(c.input)
      } else {
        headers.set('Content-Type', c.opts?.encoding ?? (c.encoding.includes('*') ? 'application/octet-stream' : c.encoding))
        body = c.input as BodyInit
      }
    }
    const req: XRPCRequest = { method: c.method, url: url.toString(), headers }
    if (this.auth) await this.auth(req)
    const res = await this.fetchFn(req.url, { method: c.method, headers: req.headers, body: body ?? null, signal: c.opts?.signal ?? null })
    if (c.binaryOutput && res.ok) return new Uint8Array(await res.arrayBuffer())
    const text = await res.text()
    let out: unknown = undefined
    if (text !== '') {
      try {
        out = JSON.parse(text)
      } catch {
        out = text
      }
    }
    if (!res.ok) throw c.errors(errorOf(res.status, out))
    if (isObject(out) && typeof out['error'] === 'string' && c.declared.includes(out['error'])) {
      throw c.errors(errorOf(res.status, out))
    }
    return out
  }
}
`
