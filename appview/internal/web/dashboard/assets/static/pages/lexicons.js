// Lexicons: the list (GET /admin/lexicons) with the network lexicons, a
// lexicon's detail (?id=<nsid>: GET /admin/lexicons/{id}, its raw JSON
// and scripts, and the XRPC playground of a query or procedure), and the
// editor (?new=1, ?edit=<nsid>: POST /admin/lexicons), whose errors are
// shown where they are: a JSON parse error at its line and column, a
// Lexicon language error at the path the API names, a Lua error at its
// line.
import { APIError, call, can, load } from "../api.js";
import { codeEditor, jsonError, jsonLocations, lineColumn, luaFailure, wireCheck } from "../editor.js";
import { $, action, denied, el, gate, jsonDetails, notify, showError, table, time } from "../ui.js";
import { network } from "./lexicons-network.js";
import { playground } from "./lexicons-playground.js";

const PAGE = "/dashboard/lexicons";

export default async function lexicons() {
  const q = new URLSearchParams(window.location.search);
  try {
    if (q.has("new")) await editor(null);
    else if (q.get("edit")) await editor(q.get("edit"));
    else if (q.get("id")) await detail(q.get("id"));
    else await list();
  } catch (err) {
    $("status").hidden = true;
    if (err instanceof APIError && err.status === 404) {
      $("denied").textContent = `There is no lexicon ${q.get("id") || q.get("edit")}.`;
      $("denied").hidden = false;
      return;
    }
    denied(err, "lexicons:read");
    return;
  }
  $("status").hidden = true;
}

// path is the page's URL for a lexicon (or its editor).
const path = (id, view = "id") => `${PAGE}?${view}=${encodeURIComponent(id)}`;

// list shows every lexicon and the network lexicons.
async function list() {
  await gate("lexicons:create", "Uploading lexicons", $("new-lexicon"));
  await rows();
  $("list-view").hidden = false;
  await network(rows);
}

// rows lists the lexicons.
async function rows() {
  const all = await load("/admin/lexicons");
  const canDelete = await gate("lexicons:delete", "Deleting lexicons");
  table($("lexicons"), all, [
    { cell: (l) => el("a", { href: path(l.id), text: l.id }) },
    { cell: (l) => el("span", { class: "badge", text: l.lexicon_type }) },
    { cell: (l) => String(l.revision), class: "num" },
    { cell: (l) => (l.backfill ? "yes" : "no") },
    { cell: (l) => l.target_collection || "–" },
    { cell: (l) => [l.has_script && "script", l.has_index_hook && "index hook"].filter(Boolean).join(", ") || "–" },
    { cell: (l) => time(l.updated_at) },
    { cell: (l) => (canDelete ? deleteButton(l.id, rows) : "") },
  ], "no-lexicons");
}

// deleteButton deletes lexicon id after a confirmation, then calls done.
function deleteButton(id, done) {
  const b = el("button", { type: "button", class: "danger small", text: "Delete", "aria-label": `Delete ${id}` });
  action(b, {
    confirm: `Delete the lexicon ${id}? Its XRPC method stops answering and its records stop being indexed (the records already stored stay).`,
    work: () => call("DELETE", `/admin/lexicons/${encodeURIComponent(id)}`),
    permission: "lexicons:delete",
    done: async () => {
      notify(`Deleted ${id}.`);
      await done();
    },
  });
  return b;
}

// detail shows one lexicon: its facts, raw JSON, scripts and playground.
async function detail(id) {
  const l = await load(`/admin/lexicons/${encodeURIComponent(id)}`);
  document.title = `${l.id} · Lexicons · Lexview`;
  $("detail-heading").textContent = l.id;
  facts($("detail-facts"), [
    ["Type", l.lexicon_type],
    ["Revision", String(l.revision)],
    ["Backfill", l.backfill ? "yes" : "no"],
    ["Target collection", l.target_collection || "–"],
    ["Created", time(l.created_at)],
    ["Updated", time(l.updated_at)],
    ["Scripts by trigger", el("a", { href: `/dashboard/scripts?suffix=${encodeURIComponent(l.id)}`, text: `Scripts ending in ${l.id}` })],
  ]);
  $("detail-json").replaceChildren(jsonDetails(l.lexicon_json, defsSummary(l.lexicon_json)));
  const scripts = [];
  if (l.script) scripts.push(el("h3", { text: "Script" }), el("pre", { class: "code", text: l.script }));
  if (l.index_hook) scripts.push(el("h3", { text: "Index hook" }), el("pre", { class: "code", text: l.index_hook }));
  $("detail-scripts").replaceChildren(...scripts);
  const edit = $("edit-lexicon");
  edit.href = path(l.id, "edit");
  await gate("lexicons:create", "Editing lexicons", edit);
  const del = $("delete-lexicon");
  if (await gate("lexicons:delete", "Deleting lexicons", del)) {
    action(del, {
      confirm: `Delete the lexicon ${l.id}? Its XRPC method stops answering and its records stop being indexed (the records already stored stay).`,
      work: () => call("DELETE", `/admin/lexicons/${encodeURIComponent(l.id)}`),
      permission: "lexicons:delete",
      errorBox: $("delete-error"),
      done: () => window.location.assign(PAGE),
    });
  }
  $("detail").hidden = false;
  if (l.lexicon_type === "query" || l.lexicon_type === "procedure") {
    await services(l.id);
    await playground(l);
  }
}

// services lists the service entries granting access to a query or
// procedure (GET /admin/lexicons/{id}/services), for an admin who may
// manage settings.
async function services(id) {
  if (!(await can("settings:manage"))) return;
  let entries;
  try {
    entries = await load(`/admin/lexicons/${encodeURIComponent(id)}/services`);
  } catch {
    return;
  }
  table($("services"), entries || [], [
    { cell: (e) => e.fragment_id },
    { cell: (e) => e.service_type },
    { cell: (e) => e.access_mode },
  ], "no-services");
  $("detail-services").hidden = false;
}

// facts fills a <dl> with [term, description] pairs.
function facts(dl, pairs) {
  dl.replaceChildren(...pairs.map(([k, v]) => el("div", {}, el("dt", { text: k }), el("dd", {}, v))));
}

// editor uploads a new lexicon (id null) or edits lexicon id.
async function editor(id) {
  const json = codeEditor($("lexicon-json"));
  const script = codeEditor($("script-source"));
  const hook = codeEditor($("index-hook"));
  $("editor").hidden = false;
  if (!(await gate("lexicons:create", "Uploading and editing lexicons", $("save-lexicon")))) {
    $("save-error").textContent = "Your account lacks the lexicons:create permission: it can read this form but not save it.";
    $("save-error").hidden = false;
  }
  const canCheck = await can("scripts:read");
  for (const b of [$("check-script"), $("check-hook")]) b.hidden = !canCheck;
  if (!canCheck) {
    await gate("scripts:read", "Checking script syntax");
  }
  if (id) {
    const l = await load(`/admin/lexicons/${encodeURIComponent(id)}`);
    $("editor-heading").textContent = `Edit ${l.id}`;
    document.title = `Edit ${l.id} · Lexicons · Lexview`;
    $("cancel-edit").href = path(l.id);
    $("lexicon-json").value = JSON.stringify(l.lexicon_json, null, 2);
    $("target-collection").value = l.target_collection || "";
    $("backfill").checked = l.backfill;
    $("script-source").value = l.script || "";
    $("index-hook").value = l.index_hook || "";
    for (const e of [json, script, hook]) e.refresh();
  }

  wireCheck($("check-script"), script, $("script-ok"));
  wireCheck($("check-hook"), hook, $("hook-ok"));

  $("lexicon-form").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const text = $("lexicon-json").value;
    showError($("save-error"), null);
    showError($("target-collection"), null);
    const bad = jsonError(text);
    if (bad) {
      jsonFailure(json, bad.line ? `The JSON does not parse at line ${bad.line}, column ${bad.column}: ${bad.message}` : `The JSON does not parse: ${bad.message}`, bad.line, bad.column);
      return;
    }
    showError($("lexicon-json"), null);
    json.clear();
    const body = {
      lexicon_json: JSON.parse(text),
      backfill: $("backfill").checked,
      target_collection: $("target-collection").value.trim() || null,
      script: $("script-source").value.trim() === "" ? "" : $("script-source").value,
      index_hook: $("index-hook").value.trim() === "" ? "" : $("index-hook").value,
    };
    const button = $("save-lexicon");
    button.disabled = true;
    try {
      const res = await call("POST", "/admin/lexicons", { body });
      saved(res, script, hook);
    } catch (err) {
      refused(err, text, json);
    } finally {
      button.disabled = false;
    }
  });
}

// jsonFailure shows a message under the JSON editor and marks its line.
function jsonFailure(json, message, line, column) {
  showError($("lexicon-json"), new Error(message));
  if (line) json.mark(line, column);
}

// refused shows why an upload was refused next to its cause: the JSON
// editor (at the path or field the message names), or the save button.
function refused(err, text, json) {
  if (!(err instanceof APIError) || err.status !== 400) {
    showError($("save-error"), err, "lexicons:create");
    return;
  }
  const msg = err.message;
  const at = /^invalid lexicon schema at (\S+): /.exec(msg);
  let where = at ? at[1] : null;
  if (!where && /^lexicon must be 1/.test(msg)) where = "lexicon";
  if (!where && (/^lexicon id is required/.test(msg) || /^invalid NSID/.test(msg))) where = "id";
  if (!where && /target_collection/.test(msg)) {
    showError($("target-collection"), err);
    return;
  }
  let line = 0;
  let column = 0;
  if (where) {
    try {
      const pos = jsonLocations(text).get(where);
      if (pos !== undefined) ({ line, column } = lineColumn(text, pos));
    } catch {
      // The text parsed before it was sent; a scan failure leaves no line.
    }
  }
  let message = msg;
  if (where && !at) message += ` (at ${where}${line ? `, line ${line}` : ""})`;
  else if (line) message += ` (line ${line})`;
  jsonFailure(json, message, line, column);
}

// saved reports an upload: the revision, the warnings, and the compile
// errors of the attached sources at their lines.
function saved(res, script, hook) {
  const box = $("save-result");
  const items = [
    el("p", { class: "ok" }, `Saved ${res.id}, revision ${res.revision}. `, el("a", { href: path(res.id), text: `Open ${res.id}` })),
  ];
  for (const w of res.warnings || []) items.push(el("p", { class: "warn", text: w }));
  if (res.backfill_job) {
    items.push(el("p", {}, `Backfill job ${res.backfill_job.id} (${res.backfill_job.status}). `,
      el("a", { href: "/dashboard/backfill", text: "Backfill jobs" })));
  }
  box.replaceChildren(...items);
  box.hidden = false;
  const errs = res.script_errors || {};
  luaFailure(script, errs.script ? `Stored, but it does not compile: ${errs.script}` : null);
  luaFailure(hook, errs.index_hook ? `Stored, but it does not compile: ${errs.index_hook}` : null);
  $("editor-heading").textContent = `Edit ${res.id}`;
  $("cancel-edit").href = path(res.id);
  history.replaceState(null, "", path(res.id, "edit"));
}

// defsSummary says in a line what a lexicon defines: its definitions by
// name and type, main first.
function defsSummary(doc) {
  const defs = Object.entries(doc?.defs ?? {});
  if (defs.length === 0) return "No definitions (show the JSON)";
  const parts = defs.map(([name, d]) => `${name} (${d?.type ?? "?"})`);
  const head = parts.slice(0, 4).join(", ");
  const more = parts.length > 4 ? ` and ${parts.length - 4} more` : "";
  return `${defs.length} definition${defs.length === 1 ? "" : "s"}: ${head}${more} (show the JSON)`;
}
