// API clients: the registered apps (GET /admin/api-clients), registering
// one (POST; the client secret is shown once and never again), its details,
// editing (PUT), deactivating and re-enabling (PUT is_active), deleting
// (DELETE), and its authentication keys: create, list with their sessions,
// recheck the published metadata, rotate, revoke the retiring key, revoke
// all (the /auth-key routes).
import { call, can, load } from "../api.js";
import { $, action, badge, busy, denied, el, fieldError, gate, limit, notify, secret, showError, table, time } from "../ui.js";

export default async function clients() {
  let list;
  try {
    list = await load("/admin/api-clients");
  } catch (err) {
    $("status").hidden = true;
    denied(err, "api-clients:view");
    return;
  }
  $("status").hidden = true;
  const page = { clients: list, current: null, may: { edit: await can("api-clients:edit"), remove: await can("api-clients:delete") } };
  if (await gate("api-clients:create", "Registering clients", $("create"))) createForm(page);
  if (!page.may.edit) limit("Editing, deactivating and managing the keys of clients", "api-clients:edit");
  if (!page.may.remove) limit("Deleting clients", "api-clients:delete");
  detail(page);
  render(page);
  $("list").hidden = false;
  const id = new URLSearchParams(window.location.hash.slice(1)).get("client");
  const c = id && page.clients.find((x) => x.id === id);
  if (c) await page.open(c);
}

// lines splits a textarea's value into its non-empty lines (or words).
function lines(s) {
  return s.split(/\s+/).map((x) => x.trim()).filter(Boolean);
}

// fields reads the shared client fields of form into a request body; on
// an edit, empty rate limits are null (the instance default again).
function fields(form, { edit, isPublic }) {
  const f = (name) => form.elements.namedItem(name).value.trim();
  const body = { name: f("name"), client_uri: f("client_uri"), redirect_uris: lines(f("redirect_uris")) };
  if (f("scopes")) body.scopes = f("scopes");
  if (isPublic) body.allowed_origins = lines(f("allowed_origins"));
  for (const [name, parse] of [["rate_limit_capacity", Number.parseInt], ["rate_limit_refill_rate", Number.parseFloat]]) {
    const v = f(name);
    if (v !== "") body[name] = parse(v);
    else if (edit) body[name] = null;
  }
  return body;
}

// refresh reads the clients again; the open client is re-read too.
async function refresh(page) {
  try {
    page.clients = await load("/admin/api-clients");
    showError($("clients-error"), null);
  } catch (err) {
    showError($("clients-error"), err, "api-clients:view");
  }
  render(page);
  if (page.current) {
    const c = page.clients.find((x) => x.id === page.current.id);
    if (c) await page.open(c);
    else page.close();
  }
}

// render fills the clients table.
function render(page) {
  table($("clients"), page.clients, [
    { cell: (c) => c.name, class: "keep" },
    { cell: (c) => el("code", { text: c.client_key }) },
    { cell: (c) => c.client_type + (c.parent_client_id ? " (child)" : "") },
    { cell: (c) => activeBadge(c) },
    { cell: (c) => time(c.created_at) },
    { cell: (c) => el("button", { type: "button", class: "secondary", text: "Manage", "aria-label": `Manage ${c.name}`,
      on: { click: () => page.open(c) } }) },
  ], "no-clients");
}

// createForm wires the registration form.
function createForm(page) {
  const form = $("create-client");
  const type = form.elements.namedItem("client_type");
  const origins = () => {
    form.elements.namedItem("allowed_origins").disabled = type.value !== "public";
  };
  type.addEventListener("change", origins);
  origins();
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    fieldError(form, null, { fallback: $("create-error") });
    $("new-client").hidden = true;
    $("new-client-secret").replaceChildren();
    const type = form.elements.namedItem("client_type").value;
    const body = { ...fields(form, { edit: false, isPublic: type === "public" }),
      client_id_url: form.elements.namedItem("client_id_url").value.trim(), client_type: type };
    if (body.allowed_origins?.length === 0) delete body.allowed_origins;
    let created;
    try {
      created = await busy($("create-submit"), () => call("POST", "/admin/api-clients", { body }));
    } catch (err) {
      fieldError(form, err, { fallback: $("create-error"), permission: "api-clients:create" });
      return;
    }
    form.reset();
    origins();
    $("new-client-key").textContent = created.client_key;
    secret($("new-client-secret"), `Client secret of “${created.name}”`, created.client_secret);
    $("new-client").hidden = false;
    $("new-client-secret").querySelector("input").focus();
    notify(`Registered the client “${created.name}”.`);
    await refresh(page);
  });
}

// detail wires the client detail panel: page.open(client), page.close().
function detail(page) {
  const box = $("detail");
  const editForm = $("edit-client");
  page.close = () => {
    page.current = null;
    box.hidden = true;
    history.replaceState(null, "", window.location.pathname);
  };
  page.open = async (c) => {
    const switched = page.current?.id !== c.id || page.refill;
    page.refill = false;
    page.current = c;
    history.replaceState(null, "", `#client=${encodeURIComponent(c.id)}`);
    $("detail-name").textContent = c.name;
    $("detail-fields").replaceChildren(...describe(c));
    $("toggle-active").textContent = c.is_active ? "Deactivate" : "Re-enable";
    if (switched) {
      showError($("detail-error"), null);
      showError($("keys-error"), null);
      $("recheck").hidden = true;
      fill(editForm, c);
      fieldError(editForm, null, { fallback: $("edit-error") });
    }
    box.hidden = false;
    if (switched) $("detail-heading").scrollIntoView({ block: "start" });
    await keys(page);
  };
  $("close-detail").addEventListener("click", page.close);

  for (const [id, ok] of [["toggle-active", page.may.edit], ["delete-client", page.may.remove], ["edit", page.may.edit], ["key-actions", page.may.edit]]) {
    $(id).hidden = !ok;
  }
  const toggle = $("toggle-active");
  action(toggle, {
    confirm: () => (page.current.is_active
      ? `Deactivate “${page.current.name}”? Its requests are refused (and those of its child clients) until it is re-enabled.`
      : `Re-enable “${page.current.name}”?`),
    ok: "Confirm",
    permission: "api-clients:edit",
    errorBox: $("detail-error"),
    work: () => call("PUT", `/admin/api-clients/${encodeURIComponent(page.current.id)}`, { body: { is_active: !page.current.is_active } }),
    done: async () => {
      notify(`“${page.current.name}” is ${page.current.is_active ? "deactivated" : "active again"}.`);
      await refresh(page);
    },
  });
  action($("delete-client"), {
    confirm: () => `Delete the client “${page.current.name}”? Its child clients go too, and its apps are refused at once. This cannot be undone.`,
    ok: "Delete",
    permission: "api-clients:delete",
    errorBox: $("detail-error"),
    work: () => call("DELETE", `/admin/api-clients/${encodeURIComponent(page.current.id)}`),
    done: async () => {
      notify(`Deleted the client “${page.current.name}”.`);
      page.close();
      await refresh(page);
    },
  });
  editForm.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    fieldError(editForm, null, { fallback: $("edit-error") });
    const c = page.current;
    try {
      const body = fields(editForm, { edit: true, isPublic: c.client_type === "public" });
      await busy($("edit-submit"), () => call("PUT", `/admin/api-clients/${encodeURIComponent(c.id)}`, { body }));
    } catch (err) {
      fieldError(editForm, err, { fallback: $("edit-error"), permission: "api-clients:edit" });
      return;
    }
    notify(`Saved “${c.name}”. The changes apply to its next request.`);
    page.refill = true; // the form shows the saved client
    await refresh(page);
  });
  keyActions(page);
}

// describe renders a client's fields as dl entries.
function describe(c) {
  const rate = c.rate_limit_capacity === null && c.rate_limit_refill_rate === null
    ? "the instance default"
    : `capacity ${c.rate_limit_capacity ?? "default"}, refill ${c.rate_limit_refill_rate ?? "default"}/s`;
  const entries = [
    ["Client key", el("code", { text: c.client_key })],
    ["Client ID URL", el("code", { text: c.client_id_url })],
    ["Home page", c.client_uri],
    ["Redirect URIs", el("ul", { class: "plain" }, ...(c.redirect_uris || []).map((u) => el("li", {}, el("code", { text: u }))))],
    ["Scopes", el("code", { text: c.scopes })],
    ["Type", c.client_type],
    ["Allowed origins", (c.allowed_origins || []).join(", ") || "–"],
    ["Rate limit", rate],
    ["State", activeBadge(c)],
    ["Created", el("span", {}, time(c.created_at), c.created_by ? ` by ${c.created_by}` : "")],
    ["Updated", time(c.updated_at)],
  ];
  if (c.parent_client_id) entries.push(["Parent client", el("code", { text: c.parent_client_id })]);
  if (c.owner_did) entries.push(["Owner", el("code", { text: c.owner_did })]);
  return entries.map(([k, v]) => el("div", {}, el("dt", { text: k }), el("dd", {}, v)));
}

// fill sets the edit form's fields from client c.
function fill(form, c) {
  const set = (name, v) => {
    form.elements.namedItem(name).value = v ?? "";
  };
  set("name", c.name);
  set("client_uri", c.client_uri);
  set("redirect_uris", (c.redirect_uris || []).join("\n"));
  set("scopes", c.scopes);
  set("allowed_origins", (c.allowed_origins || []).join("\n"));
  form.elements.namedItem("allowed_origins").disabled = c.client_type !== "public";
  set("rate_limit_capacity", c.rate_limit_capacity);
  set("rate_limit_refill_rate", c.rate_limit_refill_rate);
}

// keyPath is the path of the open client's authentication key routes.
function keyPath(page, rest = "") {
  return `/admin/api-clients/${encodeURIComponent(page.current.id)}${rest}`;
}

// keys reads and renders the open client's authentication keys.
async function keys(page) {
  let answer;
  try {
    answer = await load(keyPath(page, "/auth-keys"));
  } catch (err) {
    showError($("keys-error"), err, "api-clients:view");
    return;
  }
  page.keys = answer.keys || [];
  $("jwks-uri").textContent = answer.jwks_uri || "–";
  table($("auth-keys"), page.keys, [
    { cell: (k) => el("code", { text: k.kid }) },
    { cell: (k) => badge(k.status, { tone: { current: "ok", revoked: "bad", retiring: "warn" }[k.status] }) },
    { cell: (k) => time(k.created_at) },
    { cell: (k) => String(k.session_count), class: "num" },
    { cell: (k) => (k.status === "retiring" ? revokeRetiring(page, k) : "–") },
  ], "no-keys");
  const current = page.keys.some((k) => k.status === "current");
  const held = page.keys.some((k) => k.status !== "revoked");
  $("key-create").hidden = current;
  $("key-rotate").hidden = !current;
  $("key-recheck").hidden = !current;
  $("key-revoke-all").hidden = !held;
}

// revokeRetiring returns the button that revokes a retiring key, saying
// how many sessions it destroys.
function revokeRetiring(page, k) {
  const btn = el("button", { type: "button", class: "danger", text: "Revoke", hidden: !page.may.edit,
    "aria-label": `Revoke the retiring key ${k.kid}`, dataset: { action: "delete" } });
  action(btn, {
    confirm: () => `Revoke the retiring key ${k.kid}? It leaves the key set, and its ${k.session_count} session(s) are destroyed: ` +
      "their users sign in to the app again.",
    ok: "Revoke",
    permission: "api-clients:edit",
    errorBox: $("keys-error"),
    work: () => call("DELETE", keyPath(page, `/auth-key/${encodeURIComponent(k.kid)}`)),
    done: async (r) => {
      notify(`Revoked the key ${r.kid}: ${r.sessions_destroyed} session(s) destroyed.`);
      await keys(page);
    },
  });
  return btn;
}

// keyActions wires the buttons under the keys table.
function keyActions(page) {
  const box = $("keys-error");
  action($("key-create"), {
    permission: "api-clients:edit",
    errorBox: box,
    work: () => call("POST", keyPath(page, "/auth-key")),
    done: async (r) => {
      notify(`Created the key ${r.kid}. Publish ${r.jwks_uri} as the app's jwks_uri, then recheck.`);
      await keys(page);
    },
  });
  action($("key-recheck"), {
    permission: "api-clients:edit",
    errorBox: box,
    work: () => call("POST", keyPath(page, "/auth-key/recheck")),
    done: (r) => recheck(r),
  });
  action($("key-rotate"), {
    confirm: "Rotate the key? A new current key signs from now on; the old one becomes retiring and keeps signing the refreshes of its sessions until you revoke it.",
    ok: "Rotate",
    permission: "api-clients:edit",
    errorBox: box,
    work: () => call("POST", keyPath(page, "/auth-key/rotate")),
    done: async (r) => {
      await keys(page);
      const old = page.keys.find((k) => k.kid === r.retired_kid);
      notify(`Rotated: ${r.kid} is the current key; ${r.retired_kid} is retiring with ${old ? old.session_count : "?"} session(s). ` +
        "Check its sessions, then revoke it.");
    },
  });
  action($("key-refresh"), {
    errorBox: box,
    work: () => keys(page),
  });
  action($("key-revoke-all"), {
    confirm: () => {
      const n = page.keys.filter((k) => k.status !== "revoked").reduce((s, k) => s + k.session_count, 0);
      return `Revoke every key of “${page.current.name}”? The key set is emptied and ${n} session(s) are destroyed.`;
    },
    ok: "Revoke all",
    permission: "api-clients:edit",
    errorBox: box,
    work: () => call("DELETE", keyPath(page, "/auth-keys")),
    done: async (r) => {
      notify(`Revoked ${r.revoked} key(s): ${r.sessions_destroyed} session(s) destroyed.`);
      $("recheck").hidden = true;
      await keys(page);
    },
  });
}

// recheckNames labels the checks of a recheck.
const recheckNames = {
  auth_key: "The client holds a current key",
  metadata_fetched: "Its client ID URL answered with a metadata document",
  client_id: "The document's client_id is the client ID URL",
  token_endpoint_auth_method: "token_endpoint_auth_method is private_key_jwt",
  token_endpoint_auth_signing_alg: "token_endpoint_auth_signing_alg is ES256",
  jwks: "jwks_uri is this key set (or the inline jwks holds the current key)",
};

// recheck shows the answer of POST .../auth-key/recheck.
function recheck(r) {
  const box = $("recheck");
  box.replaceChildren(
    el("p", { class: r.confidential_ready ? "ok" : "bad",
      text: r.confidential_ready ? "Ready: this AppView can act as the app's confidential client." : `Not ready: ${r.reason || "a check failed"}.` }),
    el("ul", { class: "plain checks" }, ...Object.entries(r.checks || {}).map(([k, ok]) =>
      el("li", {}, el("span", { class: ok ? "ok" : "bad", text: ok ? "✓ " : "✗ " }), recheckNames[k] || k))),
  );
  box.hidden = false;
}

// activeBadge says whether a client is active.
function activeBadge(c) {
  return c.is_active ? badge("active") : badge("deactivated", { tone: "bad" });
}
