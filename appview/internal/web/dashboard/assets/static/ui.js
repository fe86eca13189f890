// Building blocks the dashboard's pages share: elements, tables, times,
// confirmations, errors next to what caused them, permission gates,
// one-time secrets. No framework: plain DOM.
import { APIError, can } from "./api.js";
import { relative, timeEl } from "./format.js";

export { badge, copyButton, ident, jsonDetails } from "./format.js";

// el creates an element. props: text, class, hidden, dataset, on (event
// handlers by name), and any other attribute by name (aria-*, for, type,
// ...; false and null leave it out). children: nodes or strings.
export function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(props)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "text") node.textContent = v;
    else if (k === "class") node.className = v;
    else if (k === "hidden") node.hidden = Boolean(v);
    else if (k === "dataset") Object.assign(node.dataset, v);
    else if (k === "on") for (const [ev, fn] of Object.entries(v)) node.addEventListener(ev, fn);
    else if (k === "value") node.value = v;
    else if (k === "checked") node.checked = Boolean(v);
    else node.setAttribute(k, v === true ? "" : String(v));
  }
  node.append(...children.flat().filter((c) => c !== null && c !== undefined && c !== false));
  return node;
}

// $ returns the element with id, or throws: a missing element is a bug.
export function $(id) {
  const node = document.getElementById(id);
  if (!node) throw new Error(`no element #${id}`);
  return node;
}

const numbers = new Intl.NumberFormat();

// num formats a number for the viewer's locale.
export function num(n) {
  return n === null || n === undefined ? "–" : numbers.format(n);
}

// time renders an ISO 8601 timestamp as a <time> reading "3 min ago",
// the viewer's local time and the exact value as its title; "–" when
// absent (format.js).
export function time(iso) {
  return timeEl(iso);
}

// ago says how long before now an ISO timestamp (or a Date) was.
export function ago(when) {
  return relative(when);
}

// duration renders seconds as "1 h 2 min", "3 min 4 s" or "5 s".
export function duration(seconds) {
  if (!Number.isFinite(seconds) || seconds < 0) return "–";
  const s = Math.round(seconds);
  if (s >= 3600) return `${Math.floor(s / 3600)} h ${Math.round((s % 3600) / 60)} min`;
  if (s >= 60) return `${Math.floor(s / 60)} min ${s % 60} s`;
  return `${s} s`;
}

// code renders a value as indented JSON in a <pre>.
export function code(value) {
  return el("pre", { class: "json", text: JSON.stringify(value, null, 2) });
}

// table fills tableEl's body with one row per item: columns are
// {cell: (item) => node or string, class?}. empty (a node or message) is
// shown instead of the table when there are no items.
// Each cell carries its column's heading as data-label, for stylesheets
// that stack a table's rows at phone width.
export function table(tableEl, items, columns, empty) {
  const heads = [...(tableEl.tHead?.rows[0]?.cells ?? [])].map((th) => th.textContent.trim());
  const rows = items.map((item) =>
    el("tr", {}, ...columns.map((c, i) => el("td", { class: c.class, "data-label": heads[i] }, cellContent(c.cell(item))))),
  );
  tableEl.tBodies[0].replaceChildren(...rows);
  tableEl.hidden = items.length === 0;
  if (empty) {
    const node = typeof empty === "string" ? document.getElementById(empty) : empty;
    if (node) node.hidden = items.length !== 0;
  }
}

function cellContent(v) {
  if (v === null || v === undefined) return "–";
  if (v instanceof Node) return v;
  return String(v);
}

// confirmed asks the viewer to confirm a destructive action in the
// layout's dialog and resolves to true when confirmed.
export function confirmed(message, { ok = "Delete" } = {}) {
  const dialog = $("confirm");
  $("confirm-text").textContent = message;
  $("confirm-ok").textContent = ok;
  dialog.returnValue = "";
  return new Promise((resolve) => {
    // A dialog's close event is queued, not dispatched at once: the
    // previous confirmation's event can arrive after this one opened the
    // dialog again, and is ignored (the dialog is still open then).
    const closed = () => {
      if (dialog.open) return;
      dialog.removeEventListener("close", closed);
      resolve(dialog.returnValue === "ok");
    };
    dialog.addEventListener("close", closed);
    dialog.showModal();
    $("confirm-cancel").focus();
  });
}

// explain turns a failed call into a sentence: a 403 names the
// permission the action needs.
export function explain(err, permission) {
  if (err instanceof APIError && err.status === 403 && permission) {
    return `Your account lacks the ${permission} permission this needs (the admin API answered: ${err.message}).`;
  }
  return err instanceof Error ? err.message : String(err);
}

// showError puts err's explanation in the error element next to what
// caused it: target is that element, or a form control whose
// aria-describedby names it (the control is then marked invalid). null
// clears it.
export function showError(target, err, permission) {
  const control = target instanceof HTMLInputElement || target instanceof HTMLTextAreaElement ||
    target instanceof HTMLSelectElement;
  const box = control ? document.getElementById(target.getAttribute("aria-describedby")?.split(" ")[0] ?? "") : target;
  if (control) {
    if (err) target.setAttribute("aria-invalid", "true");
    else target.removeAttribute("aria-invalid");
  }
  if (!box) return;
  box.textContent = err ? explain(err, permission) : "";
  box.hidden = !err;
}

// notify shows a short message in the page's live region.
export function notify(message, { error = false } = {}) {
  const box = $("notice");
  box.textContent = message;
  box.classList.toggle("is-error", error);
  box.hidden = false;
}

// denied shows why a page's data is unavailable, in the page's #denied
// element: the permission the page needs on a 403, else the API's error.
export function denied(err, permission) {
  const box = $("denied");
  box.textContent =
    err instanceof APIError && err.status === 403
      ? `Your account lacks the ${permission} permission this page needs (the admin API answered: ${err.message}).`
      : `The data could not be loaded: ${explain(err)}`;
  box.hidden = false;
}

// limit records on the page that an action is unavailable and why (the
// layout's #limits line), once per permission.
const limited = new Set();
export function limit(what, permission) {
  const key = `${what}\u0000${permission}`;
  if (limited.has(key)) return;
  limited.add(key);
  const box = $("limits");
  box.append(el("span", { text: `${what} is unavailable: your account lacks the ${permission} permission. ` }));
  box.hidden = false;
}

// gate hides nodes (and records why on the page) unless the admin holds
// permission; it resolves to whether the admin does.
export async function gate(permission, what, ...nodes) {
  const ok = await can(permission);
  for (const n of nodes) if (n) n.hidden = !ok;
  if (!ok && what) limit(what, permission);
  return ok;
}

// busy runs work with button disabled and marked busy, and resolves to
// its result.
export async function busy(button, work) {
  const was = button.disabled;
  button.disabled = true;
  button.setAttribute("aria-busy", "true");
  try {
    return await work();
  } finally {
    button.disabled = was;
    button.removeAttribute("aria-busy");
  }
}

// action wires button to work: an optional confirmation, the button busy
// while it runs, then done(result); a failure is shown in errorBox (or
// the page's notice) with the permission it needs.
export function action(button, { work, confirm, ok, permission, errorBox, done }) {
  button.addEventListener("click", async (ev) => {
    ev.preventDefault();
    if (confirm && !(await confirmed(typeof confirm === "function" ? confirm() : confirm, { ok }))) return;
    try {
      const result = await busy(button, work);
      if (errorBox) showError(errorBox, null);
      if (done) await done(result);
    } catch (err) {
      if (errorBox) showError(errorBox, err, permission);
      else notify(explain(err, permission), { error: true });
    }
  });
}

// secret shows a value displayed only once (a new key or client secret)
// in container: the value, a copy button and the warning that it will
// not be shown again. The value is not kept anywhere else.
export function secret(container, label, value) {
  const id = `secret-${Math.random().toString(36).slice(2)}`;
  const input = el("input", { id, type: "text", readonly: true, value, class: "secret", spellcheck: "false" });
  const copy = el("button", { type: "button", class: "secondary", text: "Copy" });
  copy.addEventListener("click", async () => {
    input.select();
    try {
      await navigator.clipboard.writeText(value);
      copy.textContent = "Copied";
    } catch {
      copy.textContent = "Select and copy";
    }
  });
  container.replaceChildren(
    el("label", { for: id, text: label }),
    el("div", { class: "row" }, input, copy),
    el("p", { class: "warn", text: "Copy it now: it is shown only this once and cannot be retrieved later." }),
  );
  container.hidden = false;
}

// formJSON reads a form's named controls into an object: checkboxes as
// booleans, number inputs as numbers (empty ones left out), the rest as
// trimmed strings (empty ones left out).
export function formJSON(form) {
  const out = {};
  for (const c of form.elements) {
    if (!c.name || c.disabled) continue;
    if (c.type === "checkbox") out[c.name] = c.checked;
    else if (c.type === "number") {
      if (c.value !== "") out[c.name] = Number(c.value);
    } else if (c.value.trim() !== "") out[c.name] = c.value.trim();
  }
  return out;
}

// fieldError shows a failed form submission next to the field it is
// about: the admin API's validation messages begin with the field's name
// ("client_uri must be an http(s) URL"), so a 400 naming a control of
// form (one with an aria-describedby error box) marks that control, and a
// 400 naming a group (an element with data-field="<name>", such as a
// fieldset of checkboxes) fills the group's error box (a 409 the same
// way: "client_id_url already registered"); anything else goes
// to fallback (an error box), or the page's notice. err null clears the
// form's errors.
export function fieldError(form, err, { fallback, permission } = {}) {
  for (const c of form.querySelectorAll("[aria-invalid]")) showError(c, null);
  for (const b of form.querySelectorAll("[data-field] .field-error")) showError(b, null);
  if (fallback) showError(fallback, null);
  if (!err) return;
  const name = err instanceof APIError && (err.status === 400 || err.status === 409) ? err.message.split(/[\s:]/)[0] : "";
  if (name) {
    const control = form.elements.namedItem(name);
    if (control instanceof Element && control.getAttribute("aria-describedby")) {
      showError(control, err, permission);
      control.focus();
      return;
    }
    const box = form.querySelector(`[data-field="${CSS.escape(name)}"] .field-error`);
    if (box) {
      showError(box, err, permission);
      return;
    }
  }
  if (fallback) showError(fallback, err, permission);
  else notify(explain(err, permission), { error: true });
}
