// The user center's shared script: copy buttons, dates in the viewer's time zone, and confirmations. Plain browser JavaScript, no build step.
"use strict";

// the words of this script in the page's language, set before it in the same file (components/assets.ts)
const appWords = self.pageWords || {};
const appSay = (key, values) => (appWords[key] || key).replace(/\{(\w+)\}/g, (hole, name) => (values && name in values ? String(values[name]) : hole));

/** Says something to screen readers (and keeps it for the tests). */
function announce(text) {
  const region = document.getElementById("announcer");
  if (region) region.textContent = text;
}

/** Copies text with the Clipboard API where the page may use it (https, localhost; a recent browser): whether it did. */
async function clipboardCopy(text) {
  try {
    if (navigator.clipboard && typeof navigator.clipboard.writeText === "function" && window.isSecureContext) {
      await navigator.clipboard.writeText(text);
      return true;
    }
  } catch (_) {
    // refused (no permission, the page not focused): the field below
  }
  return false;
}

/**
 * Without the Clipboard API (plain http, an older browser, a refusal): the text goes into a read-only field right
 * after the button, focused and selected, for the user to copy by hand (Ctrl+C, or press and hold on a phone);
 * the old copy command is tried on it too. Whether that command copied.
 */
function selectForCopy(button, text, name) {
  // the text may already be in a read-only field beside the button (a new token): that one is selected
  const beside = button.parentElement ? Array.from(button.parentElement.querySelectorAll("input[readonly], textarea[readonly]")) : [];
  let field = beside.find((f) => f.value === text);
  if (!field) {
    const multiline = text.includes("\n");
    field = button._copyField;
    if (!field?.isConnected || (field.tagName === "TEXTAREA") !== multiline) {
      if (field) field.remove(); // only ever this button's own field
      field = document.createElement(multiline ? "textarea" : "input");
      if (multiline) field.rows = Math.min(6, text.split("\n").length);
      else field.type = "text";
      field.readOnly = true;
      field.className = "copy-fallback";
      field.setAttribute("aria-label", `${name} to copy`);
      field.setAttribute("spellcheck", "false");
      field.addEventListener("focus", () => field.select());
      button.insertAdjacentElement("afterend", field);
      button._copyField = field;
    }
    field.value = text;
  }
  field.focus();
  field.select();
  try {
    field.setSelectionRange(0, text.length); // iOS selects nothing with select() alone
  } catch (_) {
    // a field type without selection ranges
  }
  let copied = false;
  try {
    copied = document.execCommand("copy");
  } catch (_) {
    copied = false;
  }
  return copied;
}

/** The escaping of the server's snippets (escapeHtml in src/http/image-resource.ts). */
const escapeHtml = (s) => s.replace(/&/g, "&amp;").replace(/"/g, "&quot;").replace(/'/g, "&#39;").replace(/</g, "&lt;").replace(/>/g, "&gt;");

/**
 * The image grid's "Responsive HTML": the text of responsiveSnippet (src/http/responsive-snippet.ts, which says what
 * it holds), composed here from the grid's ladder and the button's image instead of written out for every image.
 */
function responsiveSnippet(button) {
  const grid = button.closest("[data-ladder]");
  const ladder = (grid?.getAttribute("data-ladder") || "").split(",").filter(Boolean).map(Number);
  const column = Number(grid?.getAttribute("data-column") || 640);
  const base = button.getAttribute("data-copy-responsive") || "";
  const url = button.getAttribute("data-url") || "";
  const width = Number(button.getAttribute("data-width"));
  const height = Number(button.getAttribute("data-height"));
  const type = button.getAttribute("data-type") || "";
  const alt = button.getAttribute("data-alt") || "";
  const widths = ladder.filter((w) => w < width);
  const slot = Math.min(width, column);
  const sizes = `(max-width: ${slot}px) 100vw, ${slot}px`;
  const srcset = (entries) => entries.map(([u, w]) => `${escapeHtml(u)} ${w}w`).join(", ");
  const source = (format, mime) =>
    `<source type="${mime}" srcset="${srcset(widths.map((w) => [`${base}?w=${w}&format=${format}`, w]).concat([[`${base}?format=${format}`, width]]))}" sizes="${sizes}">`;
  const shown = ["image/jpeg", "image/png", "image/gif", "image/webp", "image/avif"].includes(type);
  const own = shown ? url : `${base}?format=jpeg`;
  const img =
    `<img src="${escapeHtml(own)}" srcset="${srcset(widths.map((w) => [`${base}?w=${w}`, w]).concat([[own, width]]))}" sizes="${sizes}"` +
    ` alt="${escapeHtml(alt)}" width="${width}" height="${height}" loading="lazy">`;
  const sources = (type === "image/gif" ? [] : [source("avif", "image/avif")]).concat(source("webp", "image/webp"));
  return `<picture>${sources.join("")}${img}</picture>`;
}

document.addEventListener("click", async (event) => {
  const button = event.target instanceof Element ? event.target.closest("[data-copy], [data-copy-responsive]") : null;
  if (!button) return;
  const name = button.getAttribute("data-copy-name") || appSay("text");
  const text = button.hasAttribute("data-copy-responsive") ? responsiveSnippet(button) : button.getAttribute("data-copy") || "";
  const label = button.dataset.label || button.textContent;
  button.dataset.label = label;
  let shown;
  if (await clipboardCopy(text)) {
    shown = appSay("copied");
    announce(appSay("copiedName", { name }));
  } else if (selectForCopy(button, text, name)) {
    shown = appSay("copied");
    announce(appSay("copiedAndSelected", { name }));
  } else {
    shown = appSay("selected");
    announce(appSay("copyRefused", { name }));
  }
  button.textContent = shown;
  clearTimeout(button._restore);
  button._restore = setTimeout(() => {
    button.textContent = label;
  }, 1500);
});

/**
 * Dates in the viewer's time zone: each <time datetime="…T…Z"> the server wrote in UTC ("2026-11-25 13:03 UTC")
 * becomes the viewer's local date and time with the zone named ("2026-11-25 22:03 GMT+9"); the UTC text stays as
 * its title. Without script, or without a zone name from Intl, the server's text stays.
 */
function localTimes(root) {
  const pad = (n) => String(n).padStart(2, "0");
  let zoneOf;
  try {
    const format = new Intl.DateTimeFormat(undefined, { timeZoneName: "short" });
    zoneOf = (at) => format.formatToParts(at).find((p) => p.type === "timeZoneName")?.value || "";
  } catch (_) {
    return;
  }
  for (const node of root.querySelectorAll("time[datetime]")) {
    const iso = node.getAttribute("datetime") || "";
    if (node.dataset.local || !/T\d{2}:\d{2}/.test(iso)) continue;
    const at = new Date(iso);
    if (Number.isNaN(at.getTime())) continue;
    const zone = zoneOf(at);
    if (!zone) continue;
    if (!node.title) node.title = node.textContent.trim();
    node.textContent = `${at.getFullYear()}-${pad(at.getMonth() + 1)}-${pad(at.getDate())} ${pad(at.getHours())}:${pad(at.getMinutes())} ${zone}`;
    node.dataset.local = "1";
  }
}
localTimes(document);

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

// a list's bulk actions wait for a selection: disabled (and saying why) while no box of the form is ticked
function bulkForms() {
  for (const form of document.querySelectorAll("form[data-bulk]")) {
    const boxes = () => Array.from(document.querySelectorAll(`input[type="checkbox"][form="${form.id}"]`));
    const buttons = Array.from(form.querySelectorAll("button"));
    const note = form.querySelector("[data-bulk-count]");
    const update = () => {
      const none = !boxes().some((b) => b.checked);
      for (const b of buttons) b.disabled = none;
      if (note) note.hidden = !none;
    };
    document.addEventListener("change", (event) => {
      if (event.target instanceof HTMLInputElement && event.target.getAttribute("form") === form.id) update();
    });
    update();
  }
}
bulkForms();

// tabs: a [data-tabs] element's sections become tabs (one shown at a time); without script they all show
function tabs() {
  for (const root of document.querySelectorAll("[data-tabs]")) {
    const list = root.querySelector('[role="tablist"]');
    const tabs = Array.from(root.querySelectorAll('[role="tab"]'));
    const panels = tabs.map((tab) => document.getElementById(tab.getAttribute("aria-controls") || ""));
    if (!list || panels.some((p) => !p)) continue;
    const show = (index, focus) => {
      tabs.forEach((tab, i) => {
        const on = i === index;
        tab.setAttribute("aria-selected", on ? "true" : "false");
        tab.tabIndex = on ? 0 : -1;
        panels[i].hidden = !on;
      });
      if (focus) tabs[index].focus();
      if (history.replaceState) history.replaceState(null, "", `#${panels[index].id}`);
    };
    tabs.forEach((tab, i) => {
      tab.addEventListener("click", () => show(i, false));
      tab.addEventListener("keydown", (event) => {
        const step = event.key === "ArrowRight" ? 1 : event.key === "ArrowLeft" ? -1 : 0;
        if (step) {
          event.preventDefault();
          show((i + step + tabs.length) % tabs.length, true);
        } else if (event.key === "Home" || event.key === "End") {
          event.preventDefault();
          show(event.key === "Home" ? 0 : tabs.length - 1, true);
        }
      });
    });
    list.hidden = false;
    const wanted = panels.findIndex((p) => `#${p.id}` === location.hash);
    show(Math.max(wanted, 0), false);
  }
}
tabs();

// a file chosen for a field that takes a data: URL (the site's logo and favicon) fills that field
document.addEventListener("change", (event) => {
  const input = event.target;
  if (!(input instanceof HTMLInputElement) || input.type !== "file" || !input.dataset.dataUrl) return;
  const target = document.getElementById(input.dataset.dataUrl);
  const file = input.files?.[0];
  if (!target || !file) return;
  const reader = new FileReader();
  reader.onload = () => {
    target.value = String(reader.result || "");
  };
  reader.readAsDataURL(file);
});

// the account menu's dark-mode switch, when the theme is the device's: on as the device is dark, and then it turns
// dark mode off (a remembered light theme)
(() => {
  const button = document.querySelector('details.menu button[name="theme"]');
  if (!button || document.documentElement.dataset.theme || !window.matchMedia?.("(prefers-color-scheme: dark)").matches) return;
  button.setAttribute("aria-pressed", "true");
  button.value = "light";
})();
