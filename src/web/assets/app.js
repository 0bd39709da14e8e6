// The user center's shared script: copy buttons and confirmations. Plain browser JavaScript, no build step.
"use strict";

/** Says something to screen readers (and keeps it for the tests). */
function announce(text) {
  const region = document.getElementById("announcer");
  if (region) region.textContent = text;
}

/** Copies text: the clipboard API where the page may use it, else a hidden text area (plain http off localhost). */
async function copyText(text) {
  try {
    if (navigator.clipboard && window.isSecureContext) {
      await navigator.clipboard.writeText(text);
      return true;
    }
  } catch (_) {
    // fall through to the old way
  }
  const area = document.createElement("textarea");
  area.value = text;
  area.setAttribute("readonly", "");
  area.style.position = "fixed";
  area.style.opacity = "0";
  document.body.appendChild(area);
  area.select();
  let done = false;
  try {
    done = document.execCommand("copy");
  } catch (_) {
    done = false;
  }
  area.remove();
  return done;
}

document.addEventListener("click", async (event) => {
  const button = event.target instanceof Element ? event.target.closest("[data-copy]") : null;
  if (!button) return;
  const name = button.getAttribute("data-copy-name") || "text";
  const ok = await copyText(button.getAttribute("data-copy") || "");
  const label = button.dataset.label || button.textContent;
  button.dataset.label = label;
  button.textContent = ok ? "Copied" : "Copy failed";
  announce(ok ? `Copied ${name}` : `Could not copy ${name}: select it and copy by hand`);
  clearTimeout(button._restore);
  button._restore = setTimeout(() => {
    button.textContent = label;
  }, 1500);
});

// forms with data-confirm ask first; the server asks again when there is no script (confirmed stays 0)
document.addEventListener("submit", (event) => {
  const form = event.target;
  if (!(form instanceof HTMLFormElement)) return;
  const question = form.getAttribute("data-confirm");
  if (!question) return;
  if (!window.confirm(question)) {
    event.preventDefault();
    return;
  }
  const flag = form.querySelector('input[name="confirmed"]');
  if (flag) flag.value = "1";
});
