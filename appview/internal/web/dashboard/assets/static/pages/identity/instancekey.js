// The instance OAuth key on the service identity page: GET
// /admin/oauth/instance-key, rotate (confirmed) and revoke a retiring key
// (confirmed).
import { call, load } from "../../api.js";
import { $, action, el, notify, showError, table, time } from "../../ui.js";

const PERM = "settings:manage";

// instanceKey lists the keys and wires the rotate button.
export default async function instanceKey() {
  action($("rotate-key"), {
    confirm: "Rotate the instance OAuth key? A new key becomes current; the current one becomes retiring and stays published until you revoke it.",
    ok: "Rotate",
    permission: PERM,
    errorBox: $("key-error"),
    work: () => call("POST", "/admin/oauth/instance-key/rotate"),
    done: async (r) => {
      await list();
      notify(`The current key is now ${r.kid}; ${r.retired_kid} is retiring.`);
    },
  });
  await list();
}

// list renders the keys; a 503 (no token encryption) is shown as such.
async function list() {
  $("instance-key").hidden = false;
  let answer;
  try {
    answer = await load("/admin/oauth/instance-key");
  } catch (err) {
    showError($("key-error"), err, PERM);
    $("rotate-key").hidden = true;
    return;
  }
  $("rotate-key").hidden = false;
  $("jwks").replaceChildren(answer.jwks_uri
    ? el("span", {}, "Published at ", el("a", { href: answer.jwks_uri, text: answer.jwks_uri }), ".")
    : el("span", { class: "hint", text: "Not published: the instance has no primary domain." }));
  table($("key-list"), answer.keys, [
    { cell: (k) => el("code", { text: k.kid }) },
    { cell: (k) => el("span", { class: k.status === "current" ? "ok" : "badge", text: k.status }) },
    { cell: (k) => time(k.created_at) },
    { cell: (k) => time(k.retired_at) },
    { cell: (k) => time(k.revoked_at) },
    { cell: revoke },
  ], "no-keys");
}

// revoke is a retiring key's revoke button.
function revoke(k) {
  if (k.status !== "retiring") return "–";
  const b = el("button", { type: "button", class: "danger", text: "Revoke", "aria-label": `Revoke ${k.kid}` });
  action(b, {
    confirm: `Revoke the retiring key ${k.kid}? It leaves the published key set: sessions established with it can no longer be refreshed.`,
    ok: "Revoke",
    permission: PERM,
    errorBox: $("key-error"),
    work: () => call("DELETE", `/admin/oauth/instance-key/${encodeURIComponent(k.kid)}`),
    done: async () => {
      await list();
      notify(`Revoked ${k.kid}.`);
    },
  });
  return b;
}
