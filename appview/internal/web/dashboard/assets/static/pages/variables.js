// Script variables: the keys (GET /admin/script-variables; values are
// never returned), setting one (POST, the value typed into a password
// field that is emptied once saved) and deleting one (DELETE).
import { call, can, load } from "../api.js";
import { $, action, busy, denied, el, fieldError, gate, limit, notify, showError, table, time } from "../ui.js";

// KEY is the rule a key must follow (the admin API checks it too).
const KEY = /^[A-Za-z_][A-Za-z0-9_.-]{0,127}$/;

export default async function variables() {
  let answer;
  try {
    answer = await load("/admin/script-variables");
  } catch (err) {
    $("status").hidden = true;
    denied(err, "script-variables:read");
    return;
  }
  $("status").hidden = true;
  const page = { vars: answer.variables || [], remove: await can("script-variables:delete") };
  page.create = await gate("script-variables:create", "Setting variables", $("set"));
  if (!page.remove) limit("Deleting variables", "script-variables:delete");
  if (page.create) setForm(page);
  render(page);
  $("list").hidden = false;
}

// refresh reads the variables again and renders them.
async function refresh(page) {
  try {
    page.vars = (await load("/admin/script-variables")).variables || [];
    showError($("vars-error"), null);
  } catch (err) {
    showError($("vars-error"), err, "script-variables:read");
  }
  render(page);
}

// render fills the variables table.
function render(page) {
  table($("vars"), page.vars, [
    { cell: (v) => el("code", { text: v.key }) },
    { cell: (v) => time(v.created_at) },
    { cell: (v) => time(v.updated_at) },
    { cell: (v) => buttons(page, v) },
  ], "no-vars");
}

// buttons returns a variable's actions: a new value (into the form) and
// deletion, each hidden without its permission.
function buttons(page, v) {
  const err = el("p", { class: "error", role: "alert", hidden: true });
  const change = el("button", { type: "button", class: "secondary", text: "New value", hidden: !page.create,
    "aria-label": `New value for ${v.key}`, on: { click: () => {
      $("var-key").value = v.key;
      $("var-value").value = "";
      $("var-value").focus();
    } } });
  const del = el("button", { type: "button", class: "danger", text: "Delete", hidden: !page.remove,
    "aria-label": `Delete ${v.key}`, dataset: { action: "delete" } });
  action(del, {
    confirm: `Delete the variable ${v.key}? Scripts that read it get nothing from now on.`,
    permission: "script-variables:delete",
    errorBox: err,
    work: () => call("DELETE", `/admin/script-variables/${encodeURIComponent(v.key)}`),
    done: async () => {
      notify(`Deleted ${v.key}.`);
      await refresh(page);
    },
  });
  return el("div", {}, el("div", { class: "actions start" }, change, del), err);
}

// setForm wires the form that sets a variable.
function setForm(page) {
  const form = $("set-var");
  const key = $("var-key");
  const value = $("var-value");
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    fieldError(form, null, { fallback: $("set-error") });
    const k = key.value.trim();
    if (!KEY.test(k)) {
      showError(key, new Error(k ? "The key must be 1 to 128 letters, digits, _, . and -, starting with a letter or _." : "Enter a key."));
      key.focus();
      return;
    }
    try {
      await busy($("set-submit"), () => call("POST", "/admin/script-variables", { body: { key: k, value: value.value } }));
    } catch (err) {
      fieldError(form, err, { fallback: $("set-error"), permission: "script-variables:create" });
      return;
    }
    form.reset(); // the value leaves the page once saved

    notify(`Saved ${k}. Scripts see the new value at once.`);
    await refresh(page);
  });
}
