// Users and permissions: the admins (GET /admin/users), adding one by DID
// with a template and/or permissions (POST /admin/users, the catalog and
// templates of GET /admin/permissions), granting and revoking permissions
// (PATCH /admin/users/{id}/permissions), removing an admin (DELETE) and,
// for the super user, handing the super user role to another admin
// (POST /admin/users/transfer-super). Only the permissions the signed-in
// admin holds can be granted; the others are shown disabled.
import { call, can, load, me } from "../api.js";
import { $, action, busy, denied, el, fieldError, gate, ident, limit, notify, showError, table, time } from "../ui.js";
import { picker } from "../perms.js";

export default async function users() {
  let m, list, catalog;
  try {
    [m, list, catalog] = await Promise.all([me(), load("/admin/users"), load("/admin/permissions")]);
  } catch (err) {
    $("status").hidden = true;
    denied(err, "users:read");
    return;
  }
  $("status").hidden = true;
  const page = {
    me: m,
    catalog,
    grantable: new Set(m.permissions),
    users: list,
    may: {
      update: await can("users:update"),
      remove: await can("users:delete"),
    },
  };
  if (!page.may.update) limit("Changing permissions", "users:update");
  if (!page.may.remove) limit("Removing admins", "users:delete");
  if (await gate("users:create", "Adding admins", $("add"))) addForm(page);
  page.edit = editForm(page);
  render(page);
  $("list").hidden = false;
}

// refresh reads the admins again and renders them.
async function refresh(page) {
  try {
    page.users = await load("/admin/users");
    showError($("users-error"), null);
  } catch (err) {
    showError($("users-error"), err, "users:read");
  }
  render(page);
}

// render fills the admins table.
function render(page) {
  const self = page.me.user.id;
  table($("users"), page.users, [
    { cell: (u) => el("span", {}, ident(u.did, { what: "DID" }), u.is_super ? el("span", { class: "badge", text: "super user" }) : null,
      u.id === self ? el("span", { class: "badge", text: "you" }) : null) },
    { cell: (u) => permissions(u) },
    { cell: (u) => time(u.created_at) },
    { cell: (u) => time(u.last_used_at) },
    { cell: (u) => actions(page, u) },
  ]);
}

// permissions summarizes an admin's permissions.
function permissions(u) {
  if (u.is_super) return "every permission (super user)";
  if (u.permissions.length === 0) return "none";
  return el("details", {}, el("summary", { text: `${u.permissions.length} permission${u.permissions.length === 1 ? "" : "s"}` }),
    el("ul", { class: "plain" }, ...u.permissions.map((p) => el("li", {}, el("code", { text: p })))));
}

// actions returns the row's buttons: permissions and removal (hidden
// without the permission; never offered for the super user or oneself),
// and the super user role for the super user to hand over.
function actions(page, u) {
  const self = u.id === page.me.user.id;
  const err = el("p", { class: "error", role: "alert", hidden: true });
  const cell = el("div", { class: "actions start" });
  if (!u.is_super) {
    const edit = el("button", { type: "button", class: "secondary", text: "Permissions", hidden: !page.may.update,
      "aria-label": `Permissions of ${u.did}`, on: { click: () => page.edit.open(u) } });
    cell.append(edit);
  }
  if (!u.is_super && !self) {
    const del = el("button", { type: "button", class: "danger", text: "Remove", hidden: !page.may.remove,
      "aria-label": `Remove ${u.did}`, dataset: { action: "delete" } });
    action(del, {
      confirm: `Remove the admin ${u.did}? Their admin API keys stop working at once.`,
      ok: "Remove",
      permission: "users:delete",
      errorBox: err,
      work: () => call("DELETE", `/admin/users/${encodeURIComponent(u.id)}`),
      done: async () => {
        notify(`Removed ${u.did}.`);
        await refresh(page);
      },
    });
    cell.append(del);
  }
  if (page.me.acts_as_super && !self) {
    const transfer = el("button", { type: "button", class: "secondary", text: "Make super user", "aria-label": `Make ${u.did} the super user` });
    action(transfer, {
      confirm: `Make ${u.did} the super user? You stop being the super user and keep only the permissions stored for you.`,
      ok: "Transfer",
      permission: "the super user role",
      errorBox: err,
      work: () => call("POST", "/admin/users/transfer-super", { body: { target_user_id: u.id } }),
      done: () => window.location.reload(),
    });
    cell.append(transfer);
  }
  return el("div", {}, cell, err);
}

// addForm wires the form that adds an admin.
function addForm(page) {
  const form = $("add-user");
  const pick = picker($("add-perms"), page.catalog.permissions, page.grantable, { prefix: "add" });
  const templates = page.catalog.templates || {};
  const select = $("user-template");
  for (const name of Object.keys(templates).sort()) {
    const lacking = templates[name].filter((p) => !page.grantable.has(p));
    select.append(el("option", { value: name, disabled: lacking.length > 0,
      text: lacking.length ? `${name} (includes ${lacking.length} permission(s) you lack)` : `${name} (${templates[name].length} permissions)` }));
  }
  select.addEventListener("change", () => pick.set(templates[select.value] || []));
  $("add-all").addEventListener("click", () => pick.all(true));
  $("add-none").addEventListener("click", () => pick.all(false));
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    fieldError(form, null, { fallback: $("add-error") });
    const did = $("user-did").value.trim();
    if (!did) {
      showError($("user-did"), new Error("Enter the DID of the account to add, such as did:plc:…"));
      $("user-did").focus();
      return;
    }
    const selected = pick.selected();
    const body = { did, permissions: selected };
    // Send the template when every one of its permissions is still
    // ticked, with the extra ones; otherwise the ticked list alone.
    const tpl = templates[select.value];
    if (tpl && tpl.every((p) => selected.includes(p))) {
      body.template = select.value;
      body.permissions = selected.filter((p) => !tpl.includes(p));
    }
    try {
      await busy($("add-submit"), () => call("POST", "/admin/users", { body }));
    } catch (err) {
      fieldError(form, err, { fallback: $("add-error"), permission: "users:create" });
      return;
    }
    form.reset();
    pick.set([]);
    notify(`Added ${did} with ${selected.length} permission(s).`);
    await refresh(page);
  });
}

// editForm wires the permissions editor and returns {open(user)}.
function editForm(page) {
  const form = $("edit-user");
  const pick = picker($("edit-perms"), page.catalog.permissions, page.grantable, { prefix: "edit" });
  let user = null;
  const close = () => {
    $("edit").hidden = true;
    user = null;
  };
  $("edit-cancel").addEventListener("click", close);
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    if (!user) return;
    fieldError(form, null, { fallback: $("edit-error") });
    const held = new Set(user.permissions);
    const want = new Set(pick.selected());
    const grant = [...want].filter((p) => !held.has(p));
    const revoke = [...held].filter((p) => !want.has(p));
    if (grant.length === 0 && revoke.length === 0) {
      notify("Nothing changed.");
      return;
    }
    let updated;
    try {
      updated = await busy($("edit-submit"), () =>
        call("PATCH", `/admin/users/${encodeURIComponent(user.id)}/permissions`, { body: { grant, revoke } }));
    } catch (err) {
      fieldError(form, err, { fallback: $("edit-error"), permission: "users:update" });
      return;
    }
    notify(`Saved the permissions of ${updated.did}: ${grant.length} granted, ${revoke.length} revoked.`);
    close();
    await refresh(page);
  });
  return {
    open(u) {
      user = u;
      fieldError(form, null, { fallback: $("edit-error") });
      $("edit-did").textContent = u.did;
      pick.set(u.permissions);
      $("edit").hidden = false;
      $("edit").scrollIntoView({ block: "start" });
      $("edit-submit").focus({ preventScroll: true });
    },
  };
}
