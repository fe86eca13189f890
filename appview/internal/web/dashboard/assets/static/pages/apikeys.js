// Admin API keys: the keys (GET /admin/api-keys, never a secret), creating
// one with a name and permissions within the signed-in admin's own (POST;
// the key is shown once), and revoking one (DELETE).
import { call, can, load, me } from "../api.js";
import { $, action, busy, denied, el, fieldError, gate, ident, limit, notify, secret, showError, table, time } from "../ui.js";
import { picker } from "../perms.js";

export default async function apikeys() {
  let m, keys;
  try {
    [m, keys] = await Promise.all([me(), load("/admin/api-keys")]);
  } catch (err) {
    $("status").hidden = true;
    denied(err, "api-keys:read");
    return;
  }
  $("status").hidden = true;
  const page = { me: m, keys, revoke: await can("api-keys:delete") };
  if (!page.revoke) limit("Revoking keys", "api-keys:delete");
  if (await gate("api-keys:create", "Creating keys", $("create"))) await createForm(page);
  render(page);
  $("list").hidden = false;
}

// refresh reads the keys again and renders them.
async function refresh(page) {
  try {
    page.keys = await load("/admin/api-keys");
    showError($("keys-error"), null);
  } catch (err) {
    showError($("keys-error"), err, "api-keys:read");
  }
  render(page);
}

// render fills the keys table.
function render(page) {
  table($("keys"), page.keys, [
    { cell: (k) => k.name, class: "keep" },
    { cell: (k) => el("code", { text: `${k.key_prefix}…` }), class: "keep" },
    { cell: (k) => (k.user_did ? ident(k.user_did, { what: "DID" }) : "removed admin") },
    { cell: (k) => el("details", {}, el("summary", { text: `${k.permissions.length} permission${k.permissions.length === 1 ? "" : "s"}` }),
      el("ul", { class: "plain" }, ...k.permissions.map((p) => el("li", {}, el("code", { text: p }))))) },
    { cell: (k) => time(k.created_at) },
    { cell: (k) => (k.last_used_at ? time(k.last_used_at) : "never") },
    { cell: (k) => revokeButton(page, k) },
  ], "no-keys");
}

// revokeButton returns a key's revoke button (hidden without
// api-keys:delete) and its error box.
function revokeButton(page, k) {
  const err = el("p", { class: "error", role: "alert", hidden: true });
  const btn = el("button", { type: "button", class: "danger", text: "Revoke", hidden: !page.revoke,
    "aria-label": `Revoke ${k.name}`, dataset: { action: "delete" } });
  action(btn, {
    confirm: `Revoke the key “${k.name}” (${k.key_prefix}…)? Whatever uses it is refused from now on.`,
    ok: "Revoke",
    permission: "api-keys:delete",
    errorBox: err,
    work: () => call("DELETE", `/admin/api-keys/${encodeURIComponent(k.id)}`),
    done: async () => {
      notify(`Revoked the key “${k.name}”.`);
      await refresh(page);
    },
  });
  return el("div", {}, btn, err);
}

// createForm wires the form that creates a key.
async function createForm(page) {
  const form = $("create-key");
  let catalog;
  try {
    catalog = await load("/admin/permissions");
  } catch {
    // GET /admin/permissions needs users:read: without it, the choice is
    // among the admin's own permissions, undescribed.
    catalog = { permissions: page.me.permissions.map((name) => ({ name, category: name.split(":")[0], description: "" })) };
  }
  const mine = new Set(page.me.permissions);
  const pick = picker($("key-perms"), catalog.permissions.filter((p) => mine.has(p.name)), mine, { prefix: "key" });
  $("key-all").addEventListener("click", () => pick.all(true));
  $("key-none").addEventListener("click", () => pick.all(false));
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    fieldError(form, null, { fallback: $("create-error") });
    $("new-key").hidden = true;
    $("new-key").replaceChildren();
    const name = $("key-name").value.trim();
    if (!name) {
      showError($("key-name"), new Error("Give the key a name, such as what will use it."));
      $("key-name").focus();
      return;
    }
    const permissions = pick.selected();
    if (permissions.length === 0) {
      showError(form.querySelector("[data-field=permissions] .field-error"), new Error("Tick at least one permission."));
      return;
    }
    let created;
    try {
      created = await busy($("create-submit"), () => call("POST", "/admin/api-keys", { body: { name, permissions } }));
    } catch (err) {
      fieldError(form, err, { fallback: $("create-error"), permission: "api-keys:create" });
      return;
    }
    form.reset();
    secret($("new-key"), `The key “${created.name}”`, created.key);
    $("new-key").querySelector("input").focus();
    notify(`Created the key “${created.name}”.`);
    await refresh(page);
  });
}
