// Sign in: the admin API key form sends the key once in the Authorization
// header of POST /auth/login-key, which sets the session cookie. The
// handle form is a plain GET to /auth/login (the OAuth flow).
import { call } from "../api.js";
import { $, showError } from "../ui.js";

export default function signin() {
  const form = $("signin-key");
  const input = $("key");
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    showError(input, null);
    try {
      await call("POST", "/auth/login-key", { headers: { Authorization: `Bearer ${input.value.trim()}` } });
      input.value = "";
      window.location.assign("/dashboard/");
    } catch (err) {
      showError(input, err);
      input.focus();
    }
  });
  // The key is sent in a header, which only this script can do: the
  // button works once it is listening (a form sent before would post the
  // key as a field, which the server refuses).
  form.querySelector("button[type=submit]").disabled = false;
}
