// The dashboard's entry point: the layout's parts every page shares (the
// signed-in admin, the navigation, signing out, the status indicator),
// then the page's own
// module, named by <body data-page>: pages/<name>.js, whose default
// export sets the page up.
import { SIGNIN, call, me } from "./api.js";

// signout wires the layout's sign-out button.
function signout() {
  const form = document.getElementById("signout");
  if (!form) return;
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    try {
      await call("POST", "/auth/logout");
    } finally {
      window.location.assign(SIGNIN);
    }
  });
}

// navigation shows who is signed in and hides the pages whose data the
// admin may not read.
async function navigation() {
  const who = document.getElementById("whoami");
  if (!who) return;
  const m = await me();
  who.textContent = m.user.did + (m.acts_as_super ? " (super user)" : "");
  who.hidden = false;
  for (const a of document.querySelectorAll("nav.side a[data-perm]")) {
    if (!m.permissions.includes(a.dataset.perm)) a.parentElement.hidden = true;
  }
}

signout();
if (document.body.classList.contains("signed-in")) {
  navigation().catch(() => {});
  // The status indicator, loaded beside the page's module rather than
  // before it. The overview shows the health with its charts, which it
  // reads anyway.
  if (document.body.dataset.page !== "overview") {
    import("./status.js").then((m) => m.watchHealth()).catch(() => {});
  }
}
const page = await import(`./pages/${document.body.dataset.page}.js`);
await page.default();
