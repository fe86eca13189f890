// The admin API as the dashboard calls it: same origin, the session
// cookie as the credential, JSON in and out.

// SIGNIN is the sign-in page, where an unauthenticated answer leads.
export const SIGNIN = "/dashboard/signin";

// APIError is a failed call: the HTTP status and the API's message.
export class APIError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

// call sends method path (with a JSON body when body is given, or raw,
// a Blob or File sent as it is with its own type) and resolves to the
// decoded answer, or rejects with an APIError.
export async function call(method, path, { body, raw, headers = {} } = {}) {
  const init = { method, credentials: "same-origin", headers: { Accept: "application/json", ...headers } };
  if (body !== undefined) {
    init.body = JSON.stringify(body);
    init.headers["Content-Type"] = "application/json";
  } else if (raw !== undefined) {
    init.body = raw;
    if (raw.type) init.headers["Content-Type"] = raw.type;
  }
  const resp = await fetch(path, init);
  const text = await resp.text();
  let data = null;
  if (text) {
    try {
      data = JSON.parse(text);
    } catch {
      data = null;
    }
  }
  if (!resp.ok) {
    const msg = data && typeof data.error === "string" ? data.error : `${resp.status} ${resp.statusText}`;
    throw new APIError(resp.status, msg);
  }
  return data;
}

// load calls GET path for a page. Unauthenticated, it goes to the
// sign-in page and never resolves; every other failure rejects.
export async function load(path) {
  try {
    return await call("GET", path);
  } catch (err) {
    if (err instanceof APIError && err.status === 401) {
      window.location.assign(SIGNIN);
      return new Promise(() => {});
    }
    throw err;
  }
}

// The signed-in admin (GET /admin/me), fetched once per page.
let mePromise;

// me resolves to the signed-in admin: {user, permissions, acts_as_super,
// credential, key_id}. Unauthenticated, it goes to the sign-in page.
export function me() {
  mePromise ??= load("/admin/me");
  return mePromise;
}

// can resolves to whether the signed-in admin holds permission perm.
export async function can(perm) {
  const m = await me();
  return m.permissions.includes(perm);
}

// query renders params as a query string ("" when empty), leaving out
// empty values.
export function query(params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v !== undefined && v !== null && v !== "") q.set(k, String(v));
  }
  const s = q.toString();
  return s ? `?${s}` : "";
}
