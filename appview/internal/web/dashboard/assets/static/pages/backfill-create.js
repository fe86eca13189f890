// The backfill page's job form: the collection picker, the accounts,
// and the reasons a job was refused shown next to the field at fault.
import { APIError, call, can, load } from "../api.js";
import { $, busy, confirmed, el, notify, num, showError } from "../ui.js";

// OTHER is the collection picker's value for a collection typed in.
const OTHER = "\u0000other";
// MAX_ACCOUNTS is the most accounts one job may name.
const MAX_ACCOUNTS = 500;

// created is called with the ID of each job the form starts.
let created = async () => {};

// createForm fills the collection picker and wires the form; onCreated
// is called with the ID of each job it starts.
export async function createForm(onCreated) {
  created = onCreated;
  $("bf-collection").addEventListener("change", () => {
    $("bf-other-wrap").hidden = $("bf-collection").value !== OTHER;
  });
  $("create-form").addEventListener("submit", create);
  await collections();
}

// collections fills the collection picker with the record lexicons and
// the collections holding records, as far as the admin may read them.
async function collections() {
  const names = new Set();
  const sources = [
    ["lexicons:read", "/admin/lexicons", (l) => (l.lexicon_type === "record" ? l.id : null)],
    ["records:read", "/admin/records/collections", (c) => c.collection],
  ];
  for (const [perm, path, name] of sources) {
    if (!(await can(perm))) continue;
    try {
      for (const item of await load(path)) {
        const n = name(item);
        if (n) names.add(n);
      }
    } catch {
      // The picker offers what could be read, and a collection typed in.
    }
  }
  $("bf-collection").replaceChildren(
    el("option", { value: "", text: "All collections with a record lexicon" }),
    ...[...names].sort().map((n) => el("option", { value: n, text: n })),
    el("option", { value: OTHER, text: "Another collection…" }),
  );
}

// create starts a job from the form.
async function create(ev) {
  ev.preventDefault();
  const picked = $("bf-collection").value;
  const other = $("bf-other");
  const accountsBox = $("bf-accounts");
  for (const c of [$("bf-collection"), other, accountsBox]) showError(c, null);
  showError($("create-error"), null);
  const collection = picked === OTHER ? other.value.trim() : picked;
  if (picked === OTHER && !collection) {
    showError(other, new Error("Enter the collection's NSID, or pick one."));
    other.focus();
    return;
  }
  const accounts = [...new Set(accountsBox.value.split("\n").map((s) => s.trim()).filter(Boolean))];
  if (accounts.length > MAX_ACCOUNTS) {
    showError(accountsBox, new Error(`${num(accounts.length)} accounts: a job may name at most ${MAX_ACCOUNTS}.`));
    accountsBox.focus();
    return;
  }
  const body = {};
  if (collection) body.collection = collection;
  if (accounts.length) body.dids = accounts;
  if (!accounts.length && !(await confirmed(
    `Crawl the whole network for ${collection || "every collection with a record lexicon"}? ` +
      "Every repository the relay lists as holding it is fetched, which can take long and many requests.",
    { ok: "Start the crawl" },
  ))) return;
  let res;
  try {
    res = await busy($("bf-start"), () => call("POST", "/admin/backfill", { body }));
  } catch (err) {
    refused(err, picked === OTHER ? other : $("bf-collection"));
    return;
  }
  notify(`Backfill job ${res.id} started.`);
  $("create-form").reset();
  $("bf-other-wrap").hidden = true;
  await created(res.id);
}

// refused shows why a job was not created next to the field at fault:
// the accounts that did not resolve, one per line, under the accounts.
function refused(err, collectionField) {
  const msg = err instanceof APIError ? err.message : "";
  const prefix = "unresolvable accounts: ";
  if (msg.startsWith(prefix)) {
    const box = $("bf-accounts-error");
    const bad = msg.slice(prefix.length).split(", ");
    box.replaceChildren(
      el("span", { text: `No job was started: ${bad.length === 1 ? "this account does" : "these accounts do"} not resolve to a DID whose document names a PDS:` }),
      el("ul", { class: "unresolvable" }, ...bad.map((b) => el("li", {}, el("code", { text: b })))),
    );
    box.hidden = false;
    $("bf-accounts").setAttribute("aria-invalid", "true");
    $("bf-accounts").focus();
  } else if (msg.startsWith("too many accounts")) {
    showError($("bf-accounts"), err);
  } else if (msg.includes("collection")) {
    showError(collectionField, err);
  } else {
    showError($("create-error"), err, "backfill:create");
  }
}
