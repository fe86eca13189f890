// Settings: branding (app name, terms and privacy URLs), the logo, the
// XRPC proxy policy, every stored setting, and the feature flags. All of
// it needs settings:manage.
import { call, load } from "../api.js";
import { $, action, denied, el, notify, showError, table } from "../ui.js";

// BRANDING are the branding settings' keys (also the form's field ids).
const BRANDING = ["app_name", "terms_of_service_url", "privacy_policy_url"];

export default async function settings() {
  let stored;
  try {
    stored = await load("/admin/settings");
  } catch (err) {
    $("status").hidden = true;
    denied(err, "settings:manage");
    return;
  }
  $("status").hidden = true;
  $("settings").hidden = false;
  branding(stored);
  logo();
  proxy();
  all(stored);
  flags();
}

// branding fills and wires the branding form: a changed field is stored
// (PUT), an emptied one removed (DELETE); each field shows its own error.
function branding(stored) {
  const form = $("branding");
  for (const key of BRANDING) $(key).value = stored[key] ?? "";
  let current = { ...stored };
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    let failed = false;
    for (const key of BRANDING) {
      const input = $(key);
      const value = input.value.trim();
      if (value === (current[key] ?? "")) continue;
      try {
        if (value === "") await call("DELETE", `/admin/settings/${key}`);
        else await call("PUT", `/admin/settings/${key}`, { body: { value } });
        current = { ...current, [key]: value || undefined };
        showError(input, null);
      } catch (err) {
        if (err.status === 404 && value === "") {
          showError(input, null); // already unset
          continue;
        }
        failed = true;
        showError(input, err, "settings:manage");
      }
    }
    if (!failed) notify("Branding saved.");
    refreshAll();
  });
}

// logo shows the stored logo (from the public GET /config, which says
// whether one is stored) and wires upload and removal.
async function logo() {
  const img = $("logo");
  const remove = $("logo-delete");
  const show = async () => {
    const cfg = await load("/config");
    const has = Boolean(cfg.logo_url);
    // A new URL each time, so the browser shows a replaced logo.
    if (has) img.src = `/settings/logo?v=${Date.now()}`;
    img.hidden = !has;
    remove.hidden = !has;
    $("no-logo").hidden = has;
  };
  await show().catch(() => {});
  const input = $("logo-file");
  $("logo-form").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const file = input.files[0];
    if (!file) return;
    try {
      await call("PUT", "/admin/settings/logo", { raw: file });
      showError(input, null);
      input.value = "";
      notify("Logo uploaded.");
      await show();
    } catch (err) {
      showError(input, err, "settings:manage");
    }
  });
  action(remove, {
    confirm: "Remove the instance logo? Your users' sign-in screens will show none.",
    ok: "Remove",
    permission: "settings:manage",
    errorBox: $("logo-error"),
    work: () => call("DELETE", "/admin/settings/logo"),
    done: async () => {
      notify("Logo removed.");
      await show();
    },
  });
}

// proxy loads and saves the XRPC proxy policy.
async function proxy() {
  const mode = $("proxy-mode");
  const patterns = $("proxy-patterns");
  const policy = await load("/admin/settings/xrpc-proxy");
  mode.value = policy.mode;
  patterns.value = (policy.patterns || []).join("\n");
  $("proxy").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const list = patterns.value.split("\n").map((p) => p.trim()).filter(Boolean);
    try {
      const saved = await call("PUT", "/admin/settings/xrpc-proxy", { body: { mode: mode.value, patterns: list } });
      patterns.value = (saved.patterns || []).join("\n");
      showError(patterns, null);
      notify(`XRPC proxy policy saved: ${saved.mode}.`);
    } catch (err) {
      showError(patterns, err, "settings:manage");
    }
  });
}

// all lists every stored setting with its removal, and wires the form
// that sets any key.
function all(stored) {
  render(stored);
  const key = $("setting-key");
  const value = $("setting-value");
  $("add-setting").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    try {
      await call("PUT", `/admin/settings/${encodeURIComponent(key.value.trim())}`, { body: { value: value.value } });
      showError(key, null);
      notify(`Setting ${key.value.trim()} saved.`);
      key.value = "";
      value.value = "";
      refreshAll();
    } catch (err) {
      showError(key, err, "settings:manage");
    }
  });
}

async function refreshAll() {
  try {
    render(await load("/admin/settings"));
  } catch {
    // The table keeps its last state.
  }
}

function render(stored) {
  const rows = Object.entries(stored).sort(([a], [b]) => a.localeCompare(b));
  table($("all-settings"), rows, [
    { cell: ([k]) => el("code", { text: k }) },
    { cell: ([, v]) => v },
    {
      cell: ([k]) => {
        const b = el("button", { type: "button", class: "danger", text: "Remove", "aria-label": `Remove the setting ${k}` });
        action(b, {
          confirm: `Remove the setting ${k}? The environment variable of that name applies again.`,
          ok: "Remove",
          permission: "settings:manage",
          work: () => call("DELETE", `/admin/settings/${encodeURIComponent(k)}`),
          done: () => {
            notify(`Setting ${k} removed.`);
            return refreshAll();
          },
        });
        return b;
      },
      class: "actions",
    },
  ], "no-settings");
}

// FLAGS describe the feature flags GET /admin/feature-flags reports.
const FLAGS = {
  jetstream: "Live ingestion from Jetstream",
  metrics: "Prometheus metrics",
  token_encryption: "Token and secret encryption (TOKEN_ENCRYPTION_KEY)",
  sqlite_vacuum: "SQLite vacuum",
};

async function flags() {
  const { flags } = await load("/admin/feature-flags");
  table($("flags"), Object.entries(flags), [
    { cell: ([name]) => FLAGS[name] ?? name },
    { cell: ([, on]) => el("span", { class: on ? "ok" : "hint", text: on ? "on" : "off" }) },
  ]);
}
