// Service identity: the identity mode and DID (GET and PUT
// /admin/service-identity), PLC sync in the mode that has one, the
// verification methods, the service entries with their bound XRPC
// methods (identity/entries.js) and the instance OAuth key
// (identity/instancekey.js). All need settings:manage.
import { call, load } from "../api.js";
import { $, action, confirmed, denied, el, notify, showError, table, time } from "../ui.js";
import entries from "./identity/entries.js";
import instanceKey from "./identity/instancekey.js";

const PERM = "settings:manage";

// Human names of the modes.
const MODES = { did_web: "did:web", did_plc: "did:plc", attach_account: "attached account" };

export default async function identity() {
  let id;
  try {
    id = await load("/admin/service-identity");
  } catch (err) {
    $("status").hidden = true;
    denied(err, PERM);
    return;
  }
  $("status").hidden = true;
  show(id);
  modeForm();
  sync();
  await Promise.all([methods(), entries(), instanceKey()]);
}

// show renders the identity and the PLC sync controls of its mode.
function show(id) {
  $("id-mode").replaceChildren(el("strong", { text: id.mode }), ` (${MODES[id.mode] ?? id.mode})`);
  $("id-did").replaceChildren(id.did ? el("code", { text: id.did }) : el("span", { class: "hint", text: "none: the instance has no primary domain" }));
  $("id-domain").replaceChildren(id.primary_domain ? el("a", { href: id.primary_domain, text: id.primary_domain }) : "–");
  $("id-document-row").hidden = !id.document_url;
  if (id.document_url) $("id-document").replaceChildren(el("a", { href: id.document_url, text: id.document_url }));
  $("id-rotation-row").hidden = id.mode !== "did_plc";
  $("id-rotation").replaceChildren(id.rotation_key ? el("code", { text: id.rotation_key }) : "–");
  $("id-account-row").hidden = id.mode !== "attach_account";
  if (id.mode === "attach_account") {
    $("id-account").replaceChildren(el("span", { text: id.account_handle ?? "–" }), id.account_pds ? ` on ${id.account_pds}` : "");
  }
  $("mode").value = id.mode;
  fields();
  $("sync-web").hidden = id.mode !== "did_web";
  $("sync-plc").hidden = id.mode !== "did_plc";
  $("sync-account").hidden = id.mode !== "attach_account";
  $("identity").hidden = false;
  $("sync").hidden = false;
}

// fields shows the mode form's fields of the chosen mode.
function fields() {
  const mode = $("mode").value;
  $("plc-fields").hidden = mode !== "did_plc";
  $("account-fields").hidden = mode !== "attach_account";
  const how = document.querySelector("input[name=plc-how]:checked").value;
  $("plc-adopt").hidden = how !== "adopt";
}

// The mode form's controls an error message is shown next to, by a word
// the message names; the rest go under the button.
const modeErrorFields = [
  [/rotation_key|rotation key/, "plc-key"],
  [/invalid did|registered at the PLC|adopting/, "plc-did"],
  [/identifier|resolved|account with a did:plc/, "acct-identifier"],
  [/password|signing in/, "acct-password"],
];

// modeForm wires the form that changes the mode.
function modeForm() {
  const form = $("mode-form");
  form.addEventListener("change", fields);
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const body = { mode: $("mode").value };
    const how = document.querySelector("input[name=plc-how]:checked").value;
    if (body.mode === "did_plc" && how === "create") body.create = true;
    if (body.mode === "did_plc" && how === "adopt") {
      body.did = $("plc-did").value.trim();
      if ($("plc-key").value) body.rotation_key = $("plc-key").value;
    }
    if (body.mode === "attach_account") {
      const ident = $("acct-identifier").value.trim();
      if (ident || $("acct-password").value) {
        body.identifier = ident;
        body.password = $("acct-password").value;
        if ($("acct-factor").value.trim()) body.auth_factor_token = $("acct-factor").value.trim();
      }
    }
    const what = body.create ? "Create a new did:plc at the PLC directory and make it the instance's identity?"
      : `Switch the instance's identity to ${body.mode}? Service-auth tokens must then name the new DID as their audience.`;
    if (!(await confirmed(what, { ok: "Set the identity" }))) return;
    const controls = ["mode", "plc-did", "plc-key", "acct-identifier", "acct-password"];
    for (const c of controls) showError($(c), null);
    showError($("mode-error"), null);
    const button = form.querySelector("button[type=submit]");
    button.disabled = true;
    try {
      const id = await call("PUT", "/admin/service-identity", { body });
      for (const c of ["plc-key", "acct-password", "acct-factor"]) $(c).value = "";
      show(id);
      notify(`The identity is now ${id.mode}${id.did ? ` (${id.did})` : ""}.`);
    } catch (err) {
      // A field hidden for the chosen mode cannot show the error.
      const hit = modeErrorFields.find(([re, c]) => re.test(err.message) && !$(c).closest("[hidden]"));
      const target = hit ? $(hit[1]) : $("mode-error");
      showError(target, err, PERM);
      if (hit) target.focus();
    } finally {
      button.disabled = false;
    }
  });
}

// sync wires PLC sync: one button in did_plc mode; request a code, then
// submit it, in attach_account mode.
function sync() {
  action($("sync-plc-button"), {
    permission: PERM,
    errorBox: $("sync-plc-error"),
    work: () => call("POST", "/admin/service-entries/sync-plc"),
    done: () => notify("The PLC directory lists the configured verification methods and services."),
  });
  action($("request-token"), {
    permission: PERM,
    errorBox: $("request-token-error"),
    work: () => call("POST", "/admin/service-entries/sync-plc/request"),
    done: () => {
      notify("The account's PDS has e-mailed a confirmation code to its owner.");
      $("token").focus();
    },
  });
  const form = $("token-form");
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const input = $("token");
    const button = form.querySelector("button[type=submit]");
    button.disabled = true;
    try {
      await call("POST", "/admin/service-entries/sync-plc/submit", { body: { token: input.value.trim() } });
      showError(input, null);
      input.value = "";
      notify("The PDS signed and submitted the change to the DID document.");
    } catch (err) {
      showError(input, err, PERM);
    } finally {
      button.disabled = false;
    }
  });
}

// methods lists the verification methods and wires the add form.
async function methods() {
  await listMethods();
  const form = $("method-form");
  const source = () => document.querySelector("input[name=method-source]:checked").value;
  form.addEventListener("change", () => {
    $("method-generate").hidden = source() !== "generate";
    $("method-public").hidden = source() !== "public";
  });
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const fragment = $("method-fragment");
    const body = { fragment_id: fragment.value.trim() };
    const keyField = source() === "generate" ? $("method-curve") : $("method-key");
    if (source() === "generate") {
      body.generate = true;
      body.key_type = $("method-curve").value;
    } else {
      body.public_key_multibase = $("method-key").value.trim();
    }
    for (const c of [fragment, $("method-curve"), $("method-key")]) showError(c, null);
    const button = form.querySelector("button[type=submit]");
    button.disabled = true;
    try {
      const m = await call("POST", "/admin/verification-methods", { body });
      fragment.value = "";
      $("method-key").value = "";
      await listMethods();
      notify(`Added the verification method ${m.fragment_id}.`);
    } catch (err) {
      const target = /fragment|already exists/.test(err.message) ? fragment : keyField;
      showError(target, err, PERM);
      target.focus();
    } finally {
      button.disabled = false;
    }
  });
}

// listMethods renders the verification methods.
async function listMethods() {
  let list;
  try {
    list = (await load("/admin/verification-methods")).verification_methods;
  } catch (err) {
    showError($("methods-error"), err, PERM);
    $("methods").hidden = false;
    return;
  }
  table($("method-list"), list, [
    { cell: (m) => el("code", { text: m.fragment_id }) },
    { cell: (m) => `${m.key_type}${m.generated ? " (generated here)" : ""}` },
    { cell: (m) => el("code", { class: "key", text: m.public_key_multibase }) },
    { cell: (m) => time(m.created_at) },
    { cell: methodActions },
  ], "no-methods");
  $("methods").hidden = false;
}

function methodActions(m) {
  const b = el("button", { type: "button", class: "danger", text: "Delete", "aria-label": `Delete ${m.fragment_id}` });
  action(b, {
    confirm: `Delete the verification method ${m.fragment_id}?${m.generated ? " Its private key is destroyed." : ""} With a did:plc, sync afterwards to remove it from the published document.`,
    permission: PERM,
    errorBox: $("methods-error"),
    work: () => call("DELETE", `/admin/verification-methods/${encodeURIComponent(m.fragment_id.replace(/^#/, ""))}`),
    done: async () => {
      await listMethods();
      notify(`Deleted the verification method ${m.fragment_id}.`);
    },
  });
  return b;
}
