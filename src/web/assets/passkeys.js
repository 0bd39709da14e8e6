// Passkey buttons of the pages: a button [data-passkey="register"|"authenticate"] asks the server for options
// (data-options), runs the browser's ceremony with @simplewebauthn/browser (vendored, served by this site), and sends
// the answer (data-verify) as a form: `response` (JSON), `name` (data-name-field), and the form token when signed in.
// The server answers { location } to go on to, or an error envelope whose message is shown.
(() => {
  const lib = window.SimpleWebAuthnBrowser;
  const csrf = document.querySelector('input[name="_csrf"]')?.value;
  const post = async (url, fields) => {
    const body = new URLSearchParams(fields);
    if (csrf) body.set("_csrf", csrf);
    const res = await fetch(url, { method: "POST", body, headers: { accept: "application/json" }, credentials: "same-origin" });
    const json = await res.json().catch(() => ({}));
    if (!res.ok) throw new Error(json.message || `HTTP ${res.status}`);
    return json;
  };
  for (const button of document.querySelectorAll("[data-passkey]")) {
    if (!lib?.browserSupportsWebAuthn()) continue;
    button.hidden = false;
    const error = button.parentElement.querySelector("[data-passkey-error]");
    button.addEventListener("click", async () => {
      error.hidden = true;
      button.disabled = true;
      try {
        const optionsJSON = await post(button.dataset.options, {});
        const response = button.dataset.passkey === "register" ? await lib.startRegistration({ optionsJSON }) : await lib.startAuthentication({ optionsJSON });
        const fields = { response: JSON.stringify(response) };
        const nameField = button.dataset.nameField && document.getElementById(button.dataset.nameField);
        if (nameField) fields.name = nameField.value;
        const done = await post(button.dataset.verify, fields);
        window.location.assign(done.location);
      } catch (e) {
        error.textContent = button.dataset.failed.replace("{reason}", e?.message ? e.message : String(e));
        error.hidden = false;
        button.disabled = false;
      }
    });
  }
})();
