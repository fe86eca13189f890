// Linked repos: the grants (GET /admin/linked-repos), creating one, and
// one grant's panel: its authorization link, its invites (created with
// the URL shown once, listed, revoked) and deleting it.
import { APIError, call, load } from "../api.js";
import { $, action, badge, busy, denied, el, explain, formJSON, gate, ident, notify, secret, showError, table, time } from "../ui.js";

const READ = "linked-repos:read";
const CREATE = "linked-repos:create";
const DELETE = "linked-repos:delete";

// The page's state: the last listing and the grant whose panel is open.
const state = { grants: [], open: null };

const perms = { create: false, delete: false };

export default async function linkedRepos() {
  let list;
  try {
    list = await load("/admin/linked-repos");
  } catch (err) {
    $("status").hidden = true;
    denied(err, READ);
    return;
  }
  $("status").hidden = true;
  perms.create = await gate(CREATE, "Creating grants, authorizing them and managing invites", $("create"),
    $("authorize"), $("invite-form"));
  perms.delete = await gate(DELETE, "Deleting a grant", $("delete-grant"));
  wire();
  show(list);
}

// refresh reads the grants again; a failure keeps the last listing and
// says so.
async function refresh() {
  try {
    show(await load("/admin/linked-repos"));
  } catch (err) {
    notify(`The grants could not be read again: ${explain(err, READ)}`, { error: true });
  }
}

// account names a grant's account: its handle and DID, or that it is open.
function account(g) {
  const parts = [];
  if (g.handle) parts.push(el("strong", { text: g.handle }));
  if (g.did && g.did !== g.handle) parts.push(ident(g.did, { what: "DID" }));
  if (parts.length === 0) return el("span", { class: "hint", text: "open (any account via invite)" });
  return el("span", {}, ...parts.flatMap((p, i) => (i ? [el("br"), p] : [p])));
}

const statusText = { pending: "pending authorization", active: "active", needs_reauth: "needs re-authorization" };

function status(g) {
  const tone = { active: "ok", pending: "run", needs_reauth: "bad" }[g.status];
  const out = el("span", {}, badge(g.status, { text: statusText[g.status] ?? g.status, tone }));
  if (g.last_error) out.append(el("br"), el("span", { class: "hint", text: g.last_error }));
  return out;
}

function scopes(g) {
  return el("span", { class: "scopes" }, ...g.scopes.split(" ").flatMap((s, i) => [i ? " " : null, el("code", { text: s })]));
}

// show renders a listing.
function show(list) {
  state.grants = list.linked_repos || [];
  table($("grant-list"), state.grants, [
    { cell: account },
    { cell: status },
    { cell: scopes },
    { cell: (g) => g.reason || "–" },
    { cell: (g) => (g.authorized_at ? el("span", {}, time(g.authorized_at), g.last_refreshed_at ? el("br") : null,
      g.last_refreshed_at ? el("span", { class: "hint" }, "refreshed ", time(g.last_refreshed_at)) : null) : "not yet") },
    { cell: (g) => el("span", {}, time(g.created_at), el("br"), el("span", { class: "hint url", text: `by ${g.created_by}` })) },
    { cell: (g) => el("button", { type: "button", class: "secondary", text: "Manage", "aria-label": `Manage grant ${g.handle || g.did || g.id}`,
      on: { click: () => openPanel(g.id) } }) },
  ], "no-grants");
  $("grants").hidden = false;
  if (state.open) {
    const g = state.grants.find((x) => x.id === state.open);
    if (g) panel(g);
    else closePanel();
  }
}

function wire() {
  $("detail-close").addEventListener("click", closePanel);
  $("create-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    create();
  });
  $("invite-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    invite();
  });
  action($("authorize"), {
    work: () => call("POST", `/admin/linked-repos/${encodeURIComponent(state.open)}/authorize`),
    permission: CREATE,
    errorBox: $("authorize-error"),
    done: (r) => {
      const box = $("authorize-result");
      box.replaceChildren(
        el("a", { href: r.authorize_url, target: "_blank", rel: "noopener noreferrer", text: "Open the authorization page" }),
        " at the account's PDS (or send this link to the account's owner): ",
        el("span", { class: "url", text: r.authorize_url }),
      );
      box.hidden = false;
    },
  });
  action($("delete-grant"), {
    confirm: () => {
      const g = state.grants.find((x) => x.id === state.open);
      const who = g ? g.handle || g.did || "this open grant" : "this grant";
      return `Delete the grant for ${who}? Its invites and stored session go with it and scripts can no longer write ` +
        "there. The authorization at the account's PDS is NOT revoked: the account's owner can revoke it in their PDS's settings.";
    },
    ok: "Delete",
    work: () => call("DELETE", `/admin/linked-repos/${encodeURIComponent(state.open)}`),
    permission: DELETE,
    errorBox: $("delete-error"),
    done: async () => {
      notify("Grant deleted. The authorization at the account's PDS is not revoked.");
      closePanel();
      await refresh();
    },
  });
}

// fieldOf names the form control an API refusal of a create is about.
function fieldOf(err) {
  if (!(err instanceof APIError)) return null;
  const m = err.message;
  if (/^scopes|scope "|^invalid NSID/.test(m)) return $("scopes");
  if (/^handle|already exists for the DID/.test(m)) return $("handle");
  if (/^reason/.test(m)) return $("reason");
  return null;
}

// create creates a grant from the form.
async function create() {
  const form = $("create-form");
  for (const id of ["scopes", "handle", "reason"]) showError($(id), null);
  showError($("create-error"), null);
  const body = formJSON(form);
  if (!body.scopes) {
    showError($("scopes"), new Error("Enter at least one scope (atproto is always included)."));
    $("scopes").focus();
    return;
  }
  let g;
  try {
    g = await busy($("create-button"), () => call("POST", "/admin/linked-repos", { body }));
  } catch (err) {
    const field = fieldOf(err);
    if (field) {
      showError(field, err, CREATE);
      field.focus();
    } else {
      showError($("create-error"), err, CREATE);
    }
    return;
  }
  form.reset();
  notify(g.handle ? `Grant for ${g.handle} created: get its authorization link or send an invite.`
    : "Open grant created: send an invite to the account that should authorize it.");
  await refresh();
  openPanel(g.id);
}

// openPanel opens grant id's panel and lists its invites.
function openPanel(id) {
  const g = state.grants.find((x) => x.id === id);
  if (!g) return;
  state.open = id;
  for (const b of ["authorize-error", "authorize-result", "delete-error", "invites-error"]) $(b).hidden = true;
  showError($("invite-expires"), null);
  $("invite-secret").replaceChildren();
  $("invite-secret").hidden = true;
  panel(g);
  $("detail").hidden = false;
  $("detail-heading").focus();
  invites();
}

function closePanel() {
  state.open = null;
  $("detail").hidden = true;
  $("invite-secret").replaceChildren();
}

// panel renders the open grant's facts.
function panel(g) {
  $("detail-heading").textContent = `Grant ${g.handle || g.did || "(open)"}`;
  const facts = [
    ["Id", el("code", { class: "url", text: g.id })],
    ["Account", account(g)],
    ["Status", status(g)],
    ["Scopes", scopes(g)],
    ["Reason", g.reason || "–"],
    ["Authorized", time(g.authorized_at)],
    ["Last refreshed", time(g.last_refreshed_at)],
    ["Created", el("span", {}, time(g.created_at), ` by ${g.created_by}`)],
  ];
  $("detail-facts").replaceChildren(...facts.flatMap(([k, v]) => [el("dt", { text: k }), el("dd", {}, v)]));
  const pinned = Boolean(g.handle);
  $("authorize-open").hidden = pinned;
  $("authorize-pinned").hidden = !pinned;
}

// invites lists the open grant's outstanding invites.
async function invites() {
  const id = state.open;
  let r;
  try {
    r = await load(`/admin/linked-repos/${encodeURIComponent(id)}/invites`);
  } catch (err) {
    showError($("invites-error"), err, READ);
    return;
  }
  if (state.open !== id) return;
  showError($("invites-error"), null);
  table($("invite-list"), r.invites || [], [
    { cell: (i) => el("code", { title: i.invite_id, text: `${i.invite_id.slice(0, 12)}…` }) },
    { cell: (i) => time(i.expires_at) },
    { cell: (i) => (perms.create ? revokeButton(id, i) : "–") },
  ], "no-invites");
}

function revokeButton(grant, inv) {
  const b = el("button", { type: "button", class: "danger", text: "Revoke", "aria-label": `Revoke invite ${inv.invite_id.slice(0, 12)}` });
  action(b, {
    confirm: "Revoke this invite? Its link stops working at once.",
    ok: "Revoke",
    work: () => call("DELETE", `/admin/linked-repos/${encodeURIComponent(grant)}/invites/${encodeURIComponent(inv.invite_id)}`),
    permission: CREATE,
    errorBox: $("invites-error"),
    done: async () => {
      notify("Invite revoked.");
      await invites();
    },
  });
  return b;
}

// invite creates an invite and shows its URL once.
async function invite() {
  const id = state.open;
  const sel = $("invite-expires");
  showError(sel, null);
  let r;
  try {
    r = await busy($("invite-create"), () =>
      call("POST", `/admin/linked-repos/${encodeURIComponent(id)}/invite`, { body: { expires_in: Number(sel.value) } }));
  } catch (err) {
    showError(sel, err, CREATE);
    return;
  }
  const box = $("invite-secret");
  secret(box, "Invite link", r.invite_url);
  box.append(el("p", { class: "hint" }, "Valid until ", time(r.expires_at),
    ", for one use. Send it to the account that should authorize the grant."));
  await invites();
}
