// The network lexicons of the lexicons page: the tracked ones (GET
// /admin/network-lexicons) with their last fetch and upstream state, a
// preview of what resolving an NSID finds (GET
// /admin/network-lexicons/resolve/{nsid}), adding one (POST
// /admin/network-lexicons) and deleting one (DELETE, which deletes the
// lexicon too).
import { call, load } from "../api.js";
import { $, action, badge, busy, code, el, gate, notify, showError, table, time } from "../ui.js";

// network shows the network lexicons and wires adding one; changed is
// called after a lexicon was added or deleted.
export async function network(changed) {
  $("network").hidden = false;
  const canDelete = await gate("lexicons:delete", "Deleting lexicons");
  const refresh = () => show(canDelete, async (nsid) => {
    notify(`Deleted ${nsid}.`);
    await changed();
    await refresh();
  });
  await refresh();
  const canAdd = await gate("lexicons:create", "Adding network lexicons", $("net-add"));
  if (!canAdd) $("net-target").parentElement.hidden = true;
  const nsid = $("net-nsid");
  const target = () => $("net-target").value.trim();

  $("net-preview").addEventListener("click", async () => {
    if (!required(nsid)) return;
    $("net-preview-box").hidden = true;
    try {
      const r = await busy($("net-preview"), () => load(`/admin/network-lexicons/resolve/${encodeURIComponent(nsid.value.trim())}`));
      showError(nsid, null);
      facts($("net-preview-facts"), [
        ["NSID", r.nsid],
        ["Type", r.lexicon_type],
        ["Authority", r.authority],
        ["Authority DID", r.authority_did],
        ["PDS", r.pds],
        ["Record", r.uri],
        ["CID", r.cid],
      ]);
      $("net-preview-schema").replaceChildren(code(r.schema));
      $("net-preview-box").hidden = false;
    } catch (err) {
      showError(nsid, err, "lexicons:read");
    }
  });

  $("network-form").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    if (!canAdd || !required(nsid)) return;
    const body = { nsid: nsid.value.trim() };
    if (target()) body.target_collection = target();
    try {
      const r = await busy($("net-add"), () => call("POST", "/admin/network-lexicons", { body }));
      showError(nsid, null);
      nsid.value = "";
      $("net-target").value = "";
      $("net-preview-box").hidden = true;
      await changed();
      await refresh();
      notify(`Added ${r.nsid} (revision ${r.revision}) from ${r.authority_did}.` +
        (r.warnings?.length ? ` ${r.warnings.join(" ")}` : ""));
    } catch (err) {
      showError(nsid, err, "lexicons:create");
    }
  });
}

// required marks an empty NSID field and says so.
function required(input) {
  if (input.value.trim() !== "") return true;
  showError(input, new Error("Enter the NSID of a published lexicon, such as com.example.feed.post."));
  input.focus();
  return false;
}

// facts fills a <dl> with [term, description] pairs.
function facts(dl, pairs) {
  dl.replaceChildren(...pairs.map(([k, v]) => el("div", {}, el("dt", { text: k }), el("dd", { text: v || "–" }))));
}

// show lists the tracked network lexicons; deleted is called after one
// was deleted.
async function show(canDelete, deleted) {
  const all = await load("/admin/network-lexicons");
  table($("network-list"), all, [
    { cell: (n) => el("a", { href: `/dashboard/lexicons?id=${encodeURIComponent(n.nsid)}`, text: n.nsid }) },
    { cell: (n) => n.authority_did },
    { cell: (n) => n.target_collection || "–" },
    { cell: (n) => time(n.last_fetched_at) },
    { cell: (n) => (n.upstream_deleted_at
      ? el("span", {}, badge("deleted", { text: "deleted upstream" }), " since ", time(n.upstream_deleted_at))
      : badge("published", { tone: "ok" })) },
    { cell: (n) => (canDelete ? remove(n.nsid, deleted) : "") },
  ], "no-network");
}

// remove is the delete button of network lexicon nsid.
function remove(nsid, deleted) {
  const b = el("button", { type: "button", class: "danger small", text: "Delete", "aria-label": `Delete network lexicon ${nsid}` });
  action(b, {
    confirm: `Stop tracking ${nsid} and delete the lexicon? Its XRPC method stops answering and its records stop being indexed.`,
    work: () => call("DELETE", `/admin/network-lexicons/${encodeURIComponent(nsid)}`),
    permission: "lexicons:delete",
    done: () => deleted(nsid),
  });
  return b;
}
