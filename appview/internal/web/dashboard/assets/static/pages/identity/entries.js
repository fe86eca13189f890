// Service entries on the service identity page: list, create (fragment
// and service type), access mode, delete (confirmed), the bound XRPC
// methods (bind with a picker of the query and procedure lexicons, when
// the admin may read lexicons; unbind) and, in allowlist mode, the caller
// DIDs admitted.
import { call, can, load } from "../../api.js";
import { $, action, el, notify, showError, time } from "../../ui.js";

const PERM = "settings:manage";

// The XRPC lexicons that can be bound, sorted; null when the admin may
// not read lexicons (the NSID is then typed).
let methods = null;

// entries lists the service entries and wires the create form.
export default async function entries() {
  if (await can("lexicons:read")) {
    try {
      const all = await load("/admin/lexicons");
      methods = all.filter((l) => l.lexicon_type === "query" || l.lexicon_type === "procedure").map((l) => l.id);
    } catch {
      methods = null;
    }
  }
  createForm();
  await list();
}

// createForm wires the form that adds an entry; a 400 is shown next to
// the field it names.
function createForm() {
  const form = $("entry-form");
  const fragment = $("entry-fragment");
  const type = $("entry-type");
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    showError(fragment, null);
    showError(type, null);
    const button = form.querySelector("button[type=submit]");
    button.disabled = true;
    try {
      const e = await call("POST", "/admin/service-entries", {
        body: { fragment_id: fragment.value.trim(), service_type: type.value.trim() },
      });
      fragment.value = "";
      type.value = "";
      await list();
      notify(`Added the service entry ${e.fragment_id}. Bind the XRPC methods it serves.`);
    } catch (err) {
      const target = /service_type/.test(err.message) ? type : fragment;
      showError(target, err, PERM);
      target.focus();
    } finally {
      button.disabled = false;
    }
  });
}

// list renders every entry with its bindings (and allowlist).
async function list() {
  $("entries").hidden = false;
  const box = $("entry-list");
  let all;
  try {
    all = await load("/admin/service-entries");
  } catch (err) {
    box.replaceChildren(el("p", { class: "error", role: "alert", text: err.message }));
    return;
  }
  const cards = await Promise.all(all.map(card));
  box.replaceChildren(...cards);
  $("no-entries").hidden = all.length > 0;
}

// card renders one entry.
async function card(e) {
  const base = `/admin/service-entries/${e.id}`;
  const [bound, allowed] = await Promise.all([
    load(`${base}/xrpcs`).catch(() => []),
    e.access_mode === "allowlist" ? load(`${base}/allowlist`).catch(() => []) : [],
  ]);
  const id = `entry-${e.id}`;
  const errBox = el("p", { id: `${id}-error`, class: "error", role: "alert", hidden: true });

  const mode = el("select", { id: `${id}-mode`, "aria-describedby": `${id}-error` },
    ...["all", "allowlist", "disabled"].map((m) => el("option", { value: m, text: m, selected: m === e.access_mode })));
  // A button applies the choice: a select's change event fires on every
  // arrow key press, which must not each be a request.
  const setMode = el("button", { type: "button", class: "secondary", text: "Set", "aria-label": `Set the access mode of ${e.fragment_id}` });
  setMode.addEventListener("click", async () => {
    if (mode.value === e.access_mode) return;
    try {
      await call("PUT", base, { body: { access_mode: mode.value } });
      showError(mode, null);
      await list();
      notify(`${e.fragment_id} now admits proxied calls from ${modeText(mode.value)}.`);
      document.getElementById(mode.id)?.focus();
    } catch (err) {
      showError(mode, err, PERM);
    }
  });

  const del = el("button", { type: "button", class: "danger", text: "Delete the entry", "aria-label": `Delete ${e.fragment_id}` });
  action(del, {
    confirm: `Delete the service entry ${e.fragment_id}, with its bindings and allowlist? It leaves the DID document (with a did:plc, after the next sync).`,
    permission: PERM,
    errorBox: errBox,
    work: () => call("DELETE", base),
    done: async () => {
      await list();
      notify(`Deleted the service entry ${e.fragment_id}.`);
    },
  });

  return el("article", { class: "entry", id, "aria-labelledby": `${id}-title` },
    el("h3", { id: `${id}-title` }, el("code", { text: e.fragment_id }), " ", el("span", { class: "badge", text: e.service_type })),
    el("p", { class: "hint" }, "Added ", time(e.created_at), "."),
    el("label", { for: mode.id, text: "Access mode" }), el("div", { class: "row" }, mode, setMode),
    el("p", { class: "hint", text: `Proxied calls are admitted from ${modeText(e.access_mode)}.` }),
    el("h4", { text: "Bound XRPC methods" }),
    bindings(e, base, bound, errBox),
    e.access_mode === "allowlist" ? allowlist(e, base, allowed, errBox) : null,
    errBox,
    el("div", { class: "actions" }, del),
  );
}

function modeText(m) {
  return { all: "every caller", allowlist: "the callers on its allowlist", disabled: "no caller" }[m] ?? m;
}

// bindings renders an entry's bound NSIDs with unbind buttons, and the
// picker that binds another.
function bindings(e, base, bound, errBox) {
  const items = bound.map((nsid) => {
    const b = el("button", { type: "button", class: "secondary", text: "Unbind", "aria-label": `Unbind ${nsid} from ${e.fragment_id}` });
    action(b, {
      permission: PERM,
      errorBox: errBox,
      work: () => call("DELETE", `${base}/xrpcs`, { body: { lexicon_ids: [nsid] } }),
      done: async () => {
        await list();
        notify(`Unbound ${nsid} from ${e.fragment_id}.`);
      },
    });
    return el("li", { class: "row" }, el("code", { text: nsid }), b);
  });
  const pickId = `entry-${e.id}-bind`;
  let picker;
  if (methods) {
    const free = methods.filter((m) => !bound.includes(m));
    picker = el("select", { id: pickId, "aria-describedby": errBox.id },
      el("option", { value: "", text: free.length ? "Choose a query or procedure…" : "No other query or procedure lexicon" }),
      ...free.map((m) => el("option", { value: m, text: m })));
  } else {
    picker = el("input", { id: pickId, type: "text", spellcheck: "false", placeholder: "com.example.getThing", "aria-describedby": errBox.id });
  }
  const bind = el("button", { type: "button", text: "Bind", "aria-label": `Bind the chosen method to ${e.fragment_id}` });
  bind.addEventListener("click", async () => {
    const nsid = picker.value.trim();
    if (!nsid) {
      picker.focus();
      return;
    }
    try {
      await call("POST", `${base}/xrpcs`, { body: { lexicon_ids: [nsid] } });
      showError(picker, null);
      await list();
      notify(`Bound ${nsid} to ${e.fragment_id}.`);
      document.getElementById(pickId)?.focus();
    } catch (err) {
      showError(picker, err, PERM);
    }
  });
  return el("div", { class: "bindings" },
    items.length ? el("ul", { class: "bound" }, ...items)
      : el("p", { class: "hint", text: "None: calls proxied to this entry's fragment are refused (403) for every method." }),
    el("label", { for: pickId, text: methods ? "Bind a method" : "Bind a method (its NSID)" }),
    el("div", { class: "row" }, picker, bind),
  );
}

// allowlist renders the caller DIDs an allowlist entry admits, with
// remove buttons, and the field that adds one.
function allowlist(e, base, dids, errBox) {
  const items = dids.map((did) => {
    const b = el("button", { type: "button", class: "secondary", text: "Remove", "aria-label": `Remove ${did} from ${e.fragment_id}'s allowlist` });
    action(b, {
      permission: PERM,
      errorBox: errBox,
      work: () => call("DELETE", `${base}/allowlist`, { body: { dids: [did] } }),
      done: async () => {
        await list();
        notify(`Removed ${did} from ${e.fragment_id}'s allowlist.`);
      },
    });
    return el("li", { class: "row" }, el("code", { text: did }), b);
  });
  const inputId = `entry-${e.id}-allow`;
  const input = el("input", { id: inputId, type: "text", spellcheck: "false", placeholder: "did:plc:…", "aria-describedby": errBox.id });
  const add = el("button", { type: "button", text: "Admit", "aria-label": `Admit the DID to ${e.fragment_id}'s allowlist` });
  add.addEventListener("click", async () => {
    const did = input.value.trim();
    if (!did) {
      input.focus();
      return;
    }
    try {
      await call("POST", `${base}/allowlist`, { body: { dids: [did] } });
      await list();
      notify(`${e.fragment_id} now admits ${did}.`);
    } catch (err) {
      showError(input, err, PERM);
    }
  });
  return el("div", { class: "allowlist" },
    el("h4", { text: "Allowlist" }),
    items.length ? el("ul", { class: "bound" }, ...items) : el("p", { class: "hint", text: "Empty: no proxied caller is admitted." }),
    el("label", { for: inputId, text: "Admit a caller DID" }),
    el("div", { class: "row" }, input, add),
  );
}
