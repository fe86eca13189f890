// Domains: GET /admin/domains, add one by origin (POST, a 400 shown next
// to the field), make one primary (POST .../primary) and delete one that
// is not primary (DELETE, confirmed). All need settings:manage.
import { call, load } from "../api.js";
import { $, action, denied, el, notify, showError, table, time } from "../ui.js";

const PERM = "settings:manage";

export default async function domains() {
  if (!(await refresh())) return;
  $("add").hidden = false;
  const form = $("add-form");
  const input = $("url");
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const button = form.querySelector("button[type=submit]");
    button.disabled = true;
    try {
      const d = await call("POST", "/admin/domains", { body: { url: input.value.trim() } });
      showError(input, null);
      input.value = "";
      await refresh();
      notify(`Added ${d.url}.`);
    } catch (err) {
      showError(input, err, PERM);
      input.focus();
    } finally {
      button.disabled = false;
    }
  });
}

// refresh reads the domains and renders them; it resolves to false when
// they could not be read (the reason is shown).
async function refresh() {
  let list;
  try {
    list = await load("/admin/domains");
  } catch (err) {
    $("status").hidden = true;
    denied(err, PERM);
    return false;
  }
  $("status").hidden = true;
  table($("domains"), list, [
    { cell: (d) => el("span", {}, el("a", { href: d.url, text: d.url }), d.is_primary ? el("span", { class: "badge primary", text: "primary" }) : null) },
    { cell: (d) => el("a", { href: d.client_id, text: d.client_id }) },
    { cell: (d) => time(d.created_at) },
    { cell: actions },
  ], "no-domains");
  $("list").hidden = false;
  return true;
}

// actions are a domain's buttons: none for the primary, which can be
// neither made primary again nor deleted.
function actions(d) {
  if (d.is_primary) return el("span", { class: "hint", text: "The primary domain cannot be deleted." });
  const primary = el("button", { type: "button", class: "secondary", text: "Make primary", "aria-label": `Make ${d.url} primary` });
  const del = el("button", { type: "button", class: "danger", text: "Delete", "aria-label": `Delete ${d.url}` });
  const box = $("list-error");
  action(primary, {
    confirm: `Make ${d.url} the primary domain? The instance's did:web and its DID document's service endpoints follow the primary domain.`,
    ok: "Make primary",
    permission: PERM,
    errorBox: box,
    work: () => call("POST", `/admin/domains/${encodeURIComponent(d.id)}/primary`),
    done: async () => {
      await refresh();
      notify(`${d.url} is now the primary domain.`);
    },
  });
  action(del, {
    confirm: `Delete the domain ${d.url}? Its client metadata, key set and configuration are no longer served there, so sign-ins through its client_id stop working.`,
    permission: PERM,
    errorBox: box,
    work: () => call("DELETE", `/admin/domains/${encodeURIComponent(d.id)}`),
    done: async () => {
      await refresh();
      notify(`Deleted ${d.url}.`);
    },
  });
  return el("div", { class: "actions" }, primary, del);
}
