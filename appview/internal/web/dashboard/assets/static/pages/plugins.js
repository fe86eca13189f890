// Plugins: the installed plugins (GET /admin/plugins) with their state,
// one plugin's panel (update check, reload, delete, secrets), installing
// from a manifest URL after a preview, and the official registry's list.
import { APIError, call, load } from "../api.js";
import { $, action, badge, busy, confirmed, denied, el, explain, gate, notify, showError, table, time } from "../ui.js";

// MASK starts a masked secret value: sent back unchanged, the API keeps
// the stored value.
const MASK = "********";

const READ = "plugins:read";
const CREATE = "plugins:create";
const DELETE = "plugins:delete";

// The page's state: the last listing, the registry's entries by id, and
// the plugin whose panel is open.
const state = { plugins: [], official: new Map(), encryption: true, open: null };

// The admin's permissions, read once.
const perms = { create: false, delete: false };

export default async function plugins() {
  let list;
  try {
    list = await load("/admin/plugins");
  } catch (err) {
    $("status").hidden = true;
    denied(err, READ);
    return;
  }
  $("status").hidden = true;
  perms.create = await gate(CREATE, "Installing, reloading and setting secrets", $("install"), $("reload-form"), $("save-secrets"));
  perms.delete = await gate(DELETE, "Deleting a plugin", $("delete-plugin"));
  $("check-update").hidden = !perms.create;
  wire();
  show(list);
  official();
}

// refresh reads the listing again and redraws it (and the open panel);
// a failure keeps the last listing and says so.
async function refresh() {
  try {
    show(await load("/admin/plugins"));
  } catch (err) {
    notify(`The plugin list could not be read again: ${explain(err, READ)}`, { error: true });
  }
}

// show renders a listing of GET /admin/plugins.
function show(list) {
  state.plugins = list.plugins || [];
  state.encryption = list.encryption_configured;
  $("encryption-off").hidden = state.encryption;
  table($("plugin-list"), state.plugins, [
    { cell: (p) => el("span", {}, el("strong", { text: p.name }), el("br"), el("code", { text: p.id })) },
    { cell: versionCell },
    { cell: (p) => el("span", {}, el("span", { class: "badge", text: p.source }), " ", el("span", { class: "url", text: p.url })) },
    { cell: secretsCell },
    { cell: (p) => (p.loaded_at ? time(p.loaded_at) : badge("not loaded", { tone: "bad" })) },
    {
      cell: (p) => el("button", { type: "button", class: "secondary", text: "Manage", "aria-label": `Manage ${p.id}`,
        on: { click: () => openPanel(p.id) } }),
    },
  ], "no-plugins");
  $("installed").hidden = false;
  if (state.open) {
    const p = state.plugins.find((x) => x.id === state.open);
    if (p) panel(p);
    else closePanel();
  }
  drawOfficial();
}

function versionCell(p) {
  const out = el("span", {}, p.version);
  if (p.update_available) out.append(" ", el("span", { class: "badge update", text: `${p.latest_version} available` }));
  if (p.sha256) out.append(el("br"), el("span", { class: "hint", title: p.sha256, text: `pinned ${p.sha256.slice(0, 12)}…` }));
  return out;
}

function secretsCell(p) {
  const n = (p.required_secrets || []).length;
  if (n === 0) return "none required";
  if (p.secrets_configured) return el("span", { class: "ok", text: `${n} set` });
  return el("span", { class: "bad", text: "missing" });
}

// wire attaches the page's forms and buttons.
function wire() {
  $("detail-close").addEventListener("click", closePanel);
  $("preview-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    preview($("manifest-url").value.trim());
  });
  $("preview-cancel").addEventListener("click", () => {
    $("preview").hidden = true;
    $("manifest-url").focus();
  });
  $("install-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    install();
  });
  $("reload-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    reload();
  });
  $("secrets-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    saveSecrets();
  });
  action($("check-update"), {
    work: () => call("POST", `/admin/plugins/${encodeURIComponent(state.open)}/check-update`),
    permission: `${READ} and ${CREATE}`,
    errorBox: $("detail-error"),
    done: async (s) => {
      await refresh();
      await official();
      if (s.update_available) notify(`${s.id}: version ${s.latest_version} is available.`);
      else if (state.official.has(s.id)) notify(`${s.id} is up to date (${s.version}).`);
      else notify(`The official registry does not list ${s.id}: there is nothing to compare its version ${s.version} with.`);
    },
  });
  action($("delete-plugin"), {
    confirm: () => {
      const p = current();
      const where = p && p.source === "file"
        ? "It is unloaded until the instance starts again (its file stays in PLUGIN_DIR)."
        : "It is unloaded and forgotten; reinstall it from its manifest URL to get it back.";
      return `Delete plugin ${state.open}? ${where} Its secrets are kept for a reinstall. Scripts calling it fail until then.`;
    },
    ok: "Delete",
    work: () => call("DELETE", `/admin/plugins/${encodeURIComponent(state.open)}`),
    permission: DELETE,
    errorBox: $("detail-error"),
    done: async () => {
      notify(`Plugin ${state.open} deleted.`);
      closePanel();
      await refresh();
    },
  });
}

function current() {
  return state.plugins.find((p) => p.id === state.open);
}

// openPanel opens plugin id's panel and loads its secrets.
function openPanel(id) {
  const p = state.plugins.find((x) => x.id === id);
  if (!p) return;
  state.open = id;
  showError($("detail-error"), null);
  showError($("reload-url"), null);
  $("reload-url").value = "";
  panel(p);
  $("detail").hidden = false;
  $("detail-heading").focus();
  secrets(p);
}

function closePanel() {
  state.open = null;
  $("detail").hidden = true;
}

// panel renders the open plugin's facts.
function panel(p) {
  const h = $("detail-heading");
  h.textContent = `${p.name} (${p.id})`;
  h.tabIndex = -1;
  const facts = [
    ["Version", p.version],
    ["Source", p.source === "file" ? "file (PLUGIN_DIR)" : "installed from a URL"],
    ["Manifest URL", el("span", { class: "url", text: p.url })],
    ["Pinned SHA-256", p.sha256 ? el("code", { class: "url", text: p.sha256 }) : "not pinned"],
    ["Authentication", p.auth_type === "oauth2" ? "oauth2 (external-account sign-in)" : "none (script library)"],
    ["Required secrets", (p.required_secrets || []).map((s) => s.key).join(", ") || "none"],
    ["Loaded", p.loaded_at ? time(p.loaded_at) : "not loaded"],
    ["Latest version", p.latest_version || p.version],
  ];
  $("detail-facts").replaceChildren(...facts.flatMap(([k, v]) => [el("dt", { text: k }), el("dd", {}, v)]));
  const upd = $("detail-update");
  upd.hidden = !p.update_available;
  if (p.update_available) {
    const pending = (p.pending_releases || []).join(", ");
    upd.replaceChildren(`Version ${p.latest_version} is available${pending ? ` (newer releases: ${pending})` : ""}.`);
    const listing = state.official.get(p.id);
    if (listing && perms.create && p.source !== "file") {
      upd.append(" ", el("button", { type: "button", class: "secondary", text: `Use its manifest URL to update`, on: {
        click: () => {
          $("reload-url").value = listing.manifest_url;
          $("reload-url").focus();
        },
      } }));
    }
  }
  const file = p.source === "file";
  $("reload-file").hidden = !file;
  $("reload-controls").hidden = file;
}

// preview fetches a manifest's preview and shows it with the install form.
async function preview(url) {
  const input = $("manifest-url");
  showError(input, null);
  $("preview").hidden = true;
  if (!url) {
    showError(input, new Error("Enter the manifest's URL."));
    input.focus();
    return;
  }
  let pv;
  try {
    pv = await busy($("preview-button"), () => call("POST", "/admin/plugins/preview", { body: { url } }));
  } catch (err) {
    showError(input, err, `${READ} and ${CREATE}`);
    input.focus();
    return;
  }
  state.preview = { url, pv };
  const secrets = pv.required_secrets || [];
  const facts = [
    ["Name", pv.name],
    ["Id", el("code", { text: pv.id })],
    ["Version", pv.version],
    ["Description", pv.description || "–"],
    ["Authentication", pv.auth_type === "oauth2" ? "oauth2 (external-account sign-in)" : "none (script library)"],
    ["Required secrets", secrets.length === 0 ? "none" : el("ul", {}, ...secrets.map((s) =>
      el("li", {}, el("code", { text: s.key }), s.name ? ` ${s.name}` : "", s.description ? ` – ${s.description}` : "")))],
    ["Manifest URL", el("span", { class: "url", text: pv.manifest_url })],
    ["Module URL", el("span", { class: "url", text: pv.wasm_url })],
  ];
  $("preview-heading").textContent = `Preview: ${pv.name} ${pv.version}`;
  $("preview-facts").replaceChildren(...facts.flatMap(([k, v]) => [el("dt", { text: k }), el("dd", {}, v)]));
  const old = state.plugins.find((p) => p.id === pv.id);
  const rep = $("preview-replaces");
  rep.hidden = !old;
  if (old) {
    rep.textContent = old.source === "file"
      ? `Plugin ${pv.id} is loaded from a file: it cannot be replaced by an install (the instance answers 409).`
      : `Installing replaces the installed ${pv.id} ${old.version}.`;
  }
  $("install-sha256").value = "";
  showError($("install-sha256"), null);
  $("preview").hidden = false;
  $("install-sha256").focus();
}

// install installs the previewed manifest, with the optional pin.
async function install() {
  const { url } = state.preview || {};
  if (!url) return;
  const shaInput = $("install-sha256");
  const sha256 = shaInput.value.trim();
  showError(shaInput, null);
  if (sha256 && !/^[0-9a-fA-F]{64}$/.test(sha256)) {
    showError(shaInput, new Error("A SHA-256 is 64 hexadecimal characters."));
    shaInput.focus();
    return;
  }
  const body = { url };
  if (sha256) body.sha256 = sha256;
  let s;
  try {
    s = await working($("install-button"), $("install-progress"), () => call("POST", "/admin/plugins", { body }));
  } catch (err) {
    showError(shaInput, err, CREATE);
    return;
  }
  $("preview").hidden = true;
  $("manifest-url").value = "";
  const need = (s.required_secrets || []).length && !s.secrets_configured;
  notify(`Plugin ${s.id} ${s.version} installed.${need ? " It needs secrets: set them in its panel." : ""}`);
  await refresh();
  openPanel(s.id);
}

// reload fetches the open plugin again, from its URL or a new one.
async function reload() {
  const id = state.open;
  const input = $("reload-url");
  const url = input.value.trim();
  showError(input, null);
  if (url && !(await confirmed(`Reload ${id} from ${url}? Its pinned SHA-256 is cleared.`, { ok: "Reload" }))) return;
  try {
    const s = await working($("reload"), $("reload-progress"), () =>
      call("POST", `/admin/plugins/${encodeURIComponent(id)}/reload`, url ? { body: { url } } : {}));
    notify(`Plugin ${s.id} reloaded: version ${s.version}.`);
    input.value = "";
    await refresh();
  } catch (err) {
    showError(input, err, CREATE);
  }
}

// working is busy with a progress line shown while work runs: fetching
// and compiling a module takes seconds.
async function working(button, progress, work) {
  progress.hidden = false;
  try {
    return await busy(button, work);
  } finally {
    progress.hidden = true;
  }
}

// secrets loads the open plugin's masked secrets into the form.
async function secrets(p) {
  const fields = $("secret-fields");
  fields.replaceChildren();
  $("secret-other").open = false;
  $("secret-other-key").value = "";
  $("secret-other-value").value = "";
  showError($("secret-other-key"), null);
  showError($("secrets-error"), null);
  const unavailable = $("secrets-unavailable");
  unavailable.hidden = true;
  if (!state.encryption) {
    unavailable.textContent = "Secrets cannot be read or set: TOKEN_ENCRYPTION_KEY is not configured (see above).";
    unavailable.hidden = false;
    $("save-secrets").hidden = true;
    $("secret-other").hidden = true;
    return;
  }
  $("save-secrets").hidden = !perms.create;
  $("secret-other").hidden = !perms.create;
  let stored;
  try {
    stored = (await load(`/admin/plugins/${encodeURIComponent(p.id)}/secrets`)).secrets || {};
  } catch (err) {
    unavailable.textContent = explain(err, READ);
    unavailable.hidden = false;
    return;
  }
  if (state.open !== p.id) return;
  const keys = [];
  for (const s of p.required_secrets || []) keys.push({ key: s.key, name: s.name, description: s.description, required: true });
  for (const k of Object.keys(stored).sort()) if (!keys.some((x) => x.key === k)) keys.push({ key: k });
  if (keys.length === 0) {
    fields.append(el("p", { class: "hint", text: "The plugin declares no secrets and none is stored." }));
    return;
  }
  keys.forEach((k, i) => fields.append(secretField(k, stored[k.key], i)));
}

// secretField renders one secret's password input, holding the masked
// stored value (or empty when unset).
function secretField(k, masked, i) {
  const id = `secret-${i}`;
  const label = k.name ? `${k.name} (${k.key})` : k.key;
  const input = el("input", { id, type: "password", autocomplete: "new-password", spellcheck: "false",
    value: masked ?? "", readonly: !perms.create, "aria-describedby": `${id}-state${k.description ? ` ${id}-desc` : ""}`,
    dataset: { key: k.key, stored: masked ?? "" } });
  const status = masked
    ? el("span", { class: "ok", text: `set: ${masked}` })
    : el("span", { class: k.required ? "bad" : "hint", text: k.required ? "not set (required)" : "not set" });
  return el("div", { class: "secret-field" },
    el("label", { for: id, text: label }),
    input,
    el("p", { id: `${id}-state`, class: "secret-state" }, status),
    k.description ? el("p", { id: `${id}-desc`, class: "hint", text: k.description }) : null,
  );
}

// saveSecrets sends the changed secrets: unchanged fields are left out
// (the API keeps what a request does not name), emptied ones clear their
// secret after a confirmation.
async function saveSecrets() {
  const id = state.open;
  const changes = {};
  const clearing = [];
  for (const input of $("secret-fields").querySelectorAll("input[data-key]")) {
    const { key, stored } = input.dataset;
    const v = input.value;
    if (v === stored) continue;
    if (v === "") {
      if (stored) {
        changes[key] = "";
        clearing.push(key);
      }
      continue;
    }
    if (v.startsWith(MASK)) {
      showError($("secrets-error"), new Error(`The value of ${key} starts with ${MASK}, which the instance reads as "keep the stored value": type the whole new value.`));
      input.focus();
      return;
    }
    changes[key] = v;
  }
  const otherKey = $("secret-other-key");
  showError(otherKey, null);
  if (otherKey.value.trim() !== "" || $("secret-other-value").value !== "") {
    const k = otherKey.value.trim();
    if (!k) {
      showError(otherKey, new Error("Name the key the value is for."));
      otherKey.focus();
      return;
    }
    changes[k] = $("secret-other-value").value;
    if (changes[k] === "") clearing.push(k);
  }
  if (Object.keys(changes).length === 0) {
    showError($("secrets-error"), new Error("Nothing changed."));
    return;
  }
  if (clearing.length && !(await confirmed(`Clear ${clearing.join(", ")} of plugin ${id}? The plugin can no longer read ${clearing.length === 1 ? "it" : "them"}.`, { ok: "Clear" }))) {
    return;
  }
  try {
    await busy($("save-secrets"), () => call("PUT", `/admin/plugins/${encodeURIComponent(id)}/secrets`, { body: { secrets: changes } }));
  } catch (err) {
    const m = err instanceof APIError ? /secret key "([^"]*)"/.exec(err.message) : null;
    if (m && m[1] === otherKey.value.trim()) showError(otherKey, err, CREATE);
    else showError($("secrets-error"), err, CREATE);
    return;
  }
  showError($("secrets-error"), null);
  notify(`Secrets of ${id} saved (${Object.keys(changes).join(", ")}).`);
  await refresh();
  const p = current();
  if (p) secrets(p);
}

// official reads the registry's list.
async function official() {
  let off;
  try {
    off = await load("/admin/plugins/official");
  } catch (err) {
    showError($("official-error"), err, READ);
    $("official").hidden = false;
    return;
  }
  showError($("official-error"), null);
  state.official = new Map((off.plugins || []).map((p) => [p.id, p]));
  state.officialRefreshed = off.last_refreshed_at;
  drawOfficial();
  if (state.open) {
    const p = current();
    if (p) panel(p);
  }
}

// drawOfficial renders the registry's entries, marking installed ones.
function drawOfficial() {
  if (state.officialRefreshed === undefined) return;
  const list = [...state.official.values()];
  const refreshed = $("official-refreshed");
  refreshed.replaceChildren();
  if (state.officialRefreshed) refreshed.append("Registry index read ", time(state.officialRefreshed), ".");
  const none = $("no-official");
  none.textContent = state.officialRefreshed
    ? "The official registry lists no plugins."
    : "No official registry is configured (PLUGIN_REGISTRY_URL), or its index could not be read yet.";
  table($("official-list"), list, [
    { cell: (o) => el("span", {}, el("strong", { text: o.name || o.id }), el("br"), el("code", { text: o.id })) },
    { cell: (o) => o.description || "–" },
    { cell: (o) => o.latest_version || "–" },
    { cell: officialAction },
  ], none);
  $("official").hidden = false;
}

function officialAction(o) {
  const have = state.plugins.find((p) => p.id === o.id);
  const status = have ? el("span", { class: "hint", text: `installed ${have.version}` }) : null;
  if (!perms.create) return status ?? "–";
  if (have && have.version === o.latest_version) return status;
  const label = have ? "Preview update" : "Preview and install";
  const btn = el("button", { type: "button", class: "secondary", text: label, "aria-label": `${label} ${o.id}`, on: {
    click: () => {
      $("manifest-url").value = o.manifest_url;
      $("install").scrollIntoView();
      preview(o.manifest_url);
    },
  } });
  return el("span", {}, status, status ? " " : null, btn);
}
