// Overview: the app folder the instance serves (`appview dev`, `appview
// serve --app`; GET /admin/stats → app_folder): where it is, when it was
// last applied, the steps of the last change, and, while its files have
// problems, each one by file and line.
import { $, el, time } from "../ui.js";

// appFolder renders the app folder's status; the section stays hidden on
// an instance that serves none.
export function appFolder(st) {
  $("app-folder").hidden = !st;
  if (!st) return;
  const applied = st.applied_at ? ["last applied ", time(st.applied_at)] : ["not applied yet"];
  $("app-folder-state").replaceChildren(
    el("code", { text: st.dir }), st.watching ? " is watched: a saved change is applied at once; " : ": ",
    ...applied, st.prune ? ". What the folder no longer has is removed." : ".");
  const problems = st.problems || [];
  $("app-folder-problems").hidden = problems.length === 0;
  $("app-folder-problems-at").replaceChildren(time(st.problems_at));
  $("app-folder-problem-list").replaceChildren(...problems.map((p) =>
    el("li", { class: "app-folder-problem" },
      p.file ? el("code", { class: "app-folder-file", text: p.line ? `${p.file}:${p.line}` : p.file }) : null,
      p.file ? " " : null, el("span", { text: p.message }))));
  const changes = st.changes || [];
  $("app-folder-changes").hidden = changes.length === 0;
  $("app-folder-changed-at").replaceChildren(time(st.changed_at));
  $("app-folder-change-list").replaceChildren(...changes.map((c) => el("li", { text: c })));
}
