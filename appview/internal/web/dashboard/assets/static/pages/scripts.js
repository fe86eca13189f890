// Scripts: the trigger-keyed Lua scripts (GET /admin/scripts, with the
// trigger-suffix filter), creating one (?new=1: POST /admin/scripts, a
// trigger, a source and a description), editing one (?id=<id>: PATCH
// /admin/scripts/{id}) and deleting one, in the code editor with the
// syntax check (POST /admin/scripts/check) and the error's line marked.
import { APIError, call, can, load, query } from "../api.js";
import { codeEditor, luaFailure, wireCheck } from "../editor.js";
import { $, action, busy, denied, el, gate, notify, showError, table, time } from "../ui.js";

const PAGE = "/dashboard/scripts";

export default async function scripts() {
  const q = new URLSearchParams(window.location.search);
  try {
    if (q.has("new")) await editor(null, q.get("trigger"));
    else if (q.get("id")) await editor(q.get("id"));
    else await list(q.get("suffix") || "");
  } catch (err) {
    $("status").hidden = true;
    if (err instanceof APIError && err.status === 404) {
      $("denied").textContent = `There is no script ${q.get("id")}.`;
      $("denied").hidden = false;
      return;
    }
    denied(err, "scripts:read");
    return;
  }
  $("status").hidden = true;
}

// list shows the scripts whose trigger ends with suffix.
async function list(suffix) {
  await gate("scripts:manage", "Creating, editing and deleting scripts", $("new-script"));
  const canManage = await can("scripts:manage");
  $("suffix").value = suffix;
  const show = async (s) => {
    const page = await load(`/admin/scripts${query({ suffix: s })}`);
    $("no-scripts").textContent = s ? `No script's trigger ends with ${s}.` : "No scripts yet.";
    table($("scripts"), page.scripts || [], [
      { cell: (x) => el("a", { href: `${PAGE}?id=${encodeURIComponent(x.id)}`, class: "mono", text: x.trigger }) },
      { cell: (x) => x.description || "–" },
      { cell: (x) => String(x.revision), class: "num" },
      { cell: (x) => time(x.updated_at) },
      { cell: (x) => (canManage ? remove(x, () => show(s)) : "") },
    ], "no-scripts");
  };
  await show(suffix);
  $("list-view").hidden = false;
  $("filter").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const s = $("suffix").value.trim();
    history.replaceState(null, "", s ? `${PAGE}${query({ suffix: s })}` : PAGE);
    await show(s);
  });
}

// remove is the delete button of script x in the list.
function remove(x, done) {
  const b = el("button", { type: "button", class: "danger small", text: "Delete", "aria-label": `Delete the script of ${x.trigger}` });
  action(b, {
    confirm: `Delete the script of ${x.trigger}? It stops running at once.`,
    work: () => call("DELETE", `/admin/scripts/${encodeURIComponent(x.id)}`),
    permission: "scripts:manage",
    done: async () => {
      notify(`Deleted the script of ${x.trigger}.`);
      await done();
    },
  });
  return b;
}

// editor creates a script (id null; trigger a suggested trigger) or
// edits script id.
async function editor(id, trigger) {
  const src = codeEditor($("source"));
  $("editor").hidden = false;
  const canManage = await gate("scripts:manage", "Saving and deleting scripts", $("save-script"));
  if (!canManage) {
    $("save-error").textContent = "Your account lacks the scripts:manage permission: it can read this script but not change it.";
    $("save-error").hidden = false;
  }
  wireCheck($("check-source"), src, $("source-ok"));
  let current = null;
  if (id) {
    current = await load(`/admin/scripts/${encodeURIComponent(id)}`);
    editing(current);
    $("description").value = current.description || "";
    $("source").value = current.source;
    src.refresh();
    if (canManage) deletable(current);
  } else {
    if (trigger) {
      const [kind, target] = splitTrigger(trigger);
      $("trigger-kind").value = kind;
      $("trigger-target").value = target;
    }
    $("source").value = "function handle()\n  return {}\nend\n";
    src.refresh();
    lexiconIDs();
  }

  $("script-form").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    if (!canManage) return;
    showError($("save-error"), null);
    $("save-result").hidden = true;
    const target = $("trigger-target");
    if (!current && target.value.trim() === "") {
      showError(target, new Error("Enter the NSID (or, for label.arrive, the label value or *)."));
      target.focus();
      return;
    }
    const body = { source: $("source").value, description: $("description").value.trim() };
    if (!current) body.trigger = `${$("trigger-kind").value}:${target.value.trim()}`;
    try {
      const r = await busy($("save-script"), () => (current
        ? call("PATCH", `/admin/scripts/${encodeURIComponent(current.id)}`, { body })
        : call("POST", "/admin/scripts", { body })));
      showError(target, null);
      luaFailure(src, null);
      $("save-result").textContent = `Saved the script of ${r.trigger}, revision ${r.revision}.`;
      $("save-result").hidden = false;
      if (!current) {
        current = { id: r.id, trigger: r.trigger };
        editing(current);
        history.replaceState(null, "", `${PAGE}?id=${encodeURIComponent(r.id)}`);
        deletable(current);
      }
    } catch (err) {
      refused(err, src, target);
    }
  });
}

// deletable offers to delete script s.
function deletable(s) {
  const del = $("delete-script");
  del.hidden = false;
  action(del, {
    confirm: `Delete the script of ${s.trigger}? It stops running at once.`,
    work: () => call("DELETE", `/admin/scripts/${encodeURIComponent(s.id)}`),
    permission: "scripts:manage",
    errorBox: $("save-error"),
    done: () => window.location.assign(PAGE),
  });
}

// editing shows the fixed trigger of an existing script.
function editing(s) {
  $("editor-heading").textContent = `Edit the script of ${s.trigger}`;
  document.title = `${s.trigger} · Scripts · Lexview`;
  $("trigger-fields").hidden = true;
  $("trigger-fixed").textContent = `Trigger: ${s.trigger}`;
  $("trigger-fixed").hidden = false;
}

// refused shows why a save was refused next to its cause: the source
// (at the line a syntax error names), the trigger, or the save button.
function refused(err, src, target) {
  if (err instanceof APIError && err.status === 400) {
    if (/^source|syntax error/.test(err.message)) {
      luaFailure(src, err.message);
      return;
    }
    if (/^trigger/.test(err.message)) {
      showError(target, err);
      return;
    }
  }
  showError($("save-error"), err, "scripts:manage");
}

// splitTrigger splits "kind:target".
function splitTrigger(t) {
  const i = t.indexOf(":");
  return i < 0 ? ["xrpc.query", t] : [t.slice(0, i), t.slice(i + 1)];
}

// lexiconIDs offers the lexicons' ids for the trigger's NSID.
async function lexiconIDs() {
  if (!(await can("lexicons:read"))) return;
  try {
    const all = await load("/admin/lexicons");
    $("lexicon-ids").replaceChildren(...all.map((l) => el("option", { value: l.id })));
  } catch {
    // Only a convenience: the NSID can be typed.
  }
}
