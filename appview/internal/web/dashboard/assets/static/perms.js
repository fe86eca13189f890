// The permission picker of the users and admin API keys pages: the
// catalog of GET /admin/permissions as checkboxes grouped by category,
// each with its description. The admin API refuses to grant a permission
// the caller lacks, so those boxes are disabled and say why.
import { el } from "./ui.js";

// picker fills container with the catalog's checkboxes (named name, ids
// starting with prefix). grantable is the set of permissions the signed-in
// admin holds. It returns {selected(), set(names), all(on)}.
export function picker(container, catalog, grantable, { prefix, name = "permissions" }) {
  const boxes = new Map();
  const categories = new Map();
  for (const p of catalog) {
    if (!categories.has(p.category)) categories.set(p.category, []);
    categories.get(p.category).push(p);
  }
  const groups = [...categories].map(([category, perms]) =>
    el("fieldset", { class: "perm-group" }, el("legend", { text: category }),
      ...perms.map((p) => {
        const id = `${prefix}-${p.name.replace(/[^a-z0-9]/gi, "-")}`;
        const may = grantable.has(p.name);
        const box = el("input", { type: "checkbox", id, name, value: p.name, disabled: !may });
        boxes.set(p.name, box);
        return el("div", { class: "perm" }, box,
          el("label", { for: id, class: "inline" }, el("code", { text: p.name }),
            el("span", { class: "hint", text: may ? p.description : `${p.description} (you lack it, so you cannot grant it)` })));
      })));
  container.classList.add("perm-grid");
  container.replaceChildren(...groups);
  return {
    // selected returns the checked permissions, in catalog order.
    selected: () => [...boxes].filter(([, b]) => b.checked).map(([n]) => n),
    // set checks exactly names; a held permission the caller cannot grant
    // stays enabled (it can be revoked), an unheld one stays disabled.
    set(names) {
      const held = new Set(names);
      for (const [n, b] of boxes) {
        b.checked = held.has(n);
        b.disabled = !grantable.has(n) && !held.has(n);
      }
    },
    // all checks (on) or unchecks every enabled box.
    all(on) {
      for (const b of boxes.values()) if (!b.disabled) b.checked = on;
    },
  };
}
