// The upload page: files chosen or dropped go one after another to POST /api/v1/upload, the public API, with a
// temporary upload token that the page obtains for the signed-in account. Progress and links per file.
"use strict";

(() => {
  const form = document.getElementById("upload-form");
  const input = document.getElementById("files");
  const zone = document.getElementById("drop-zone");
  const list = document.getElementById("upload-list");
  const formToken = document.querySelector('input[name="_csrf"]')?.value || "";
  if (!form || !input || !zone || !list) return;

  // the page's words, from the server's catalogs in the page's language: set before this script, in the same file
  const messages = self.uploadMessages || {};
  const say = (key, values) => (messages[key] || key).replace(/\{(\w+)\}/g, (hole, name) => (values && name in values ? String(values[name]) : hole));
  const lang = document.documentElement.lang || "en";
  let uploads = 0;

  /** The page's upload token, renewed a minute before it expires (or when the API refuses it). */
  let current = null;
  async function uploadToken(renew) {
    if (!renew && current && current.until - Date.now() > 60_000) return current.token;
    const res = await fetch(form.getAttribute("data-token-url"), {
      method: "POST",
      credentials: "same-origin",
      headers: { Accept: "application/json", "X-CSRF-Token": formToken },
    });
    let body = null;
    try {
      body = await res.json();
    } catch (_) {
      body = null;
    }
    if (res.status === 401) throw new Error(say("sessionEnded"));
    if (!res.ok || !body || body.status !== true) throw new Error(body?.message || say("serverAnswered", { status: res.status }));
    current = { token: body.data.token, until: Date.now() + body.data.expires_in * 1000 };
    return current.token;
  }

  /** The optional fields, as the API names them, read when the file's turn comes. */
  function fields() {
    const out = [];
    const value = (name) => form.elements.namedItem(name);
    const strategy = value("strategy_id");
    if (strategy?.value) out.push(["strategy_id", strategy.value]);
    const album = value("album_id");
    if (album?.value) out.push(["album_id", album.value]);
    const permission = form.querySelector('input[name="permission"]:checked');
    out.push(["permission", permission ? permission.value : "1"]);
    const expiry = value("expired_at");
    if (expiry?.value) {
      const at = new Date(expiry.value); // the browser's local time, sent with its offset (UTC)
      if (!Number.isNaN(at.getTime())) out.push(["expired_at", at.toISOString()]);
    }
    return out;
  }

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === "class") node.className = v;
      else if (k === "text") node.textContent = v;
      else node.setAttribute(k, v);
    }
    for (const child of children) if (child) node.append(child);
    return node;
  }

  /** The image's "Responsive HTML" snippet, as the image grid shows it. */
  async function responsive(key) {
    const res = await fetch(form.getAttribute("data-snippets-url") + encodeURIComponent(key), {
      credentials: "same-origin",
      headers: { Accept: "application/json" },
    });
    const body = await res.json();
    if (!res.ok || !body || body.status !== true) throw new Error(say("serverAnswered", { status: res.status }));
    return body.data.responsive_html;
  }

  // the group's limits, as the page shows them: the API checks them again, but a file over them is not sent at all
  const maxBytes = Number(form.getAttribute("data-max-bytes")) || 0;
  const extensions = (form.getAttribute("data-extensions") || "").split(",").filter(Boolean);
  const unit = form.getAttribute("data-size-unit") === "KB" ? "KB" : "MB";

  /** A size in the page's one unit, one decimal (more where one would hide a difference); "<0.1" for a tiny file. */
  function size(bytes, digits) {
    const d = digits || 1;
    const value = bytes / (unit === "MB" ? 1024 * 1024 : 1024);
    const format = (n) => new Intl.NumberFormat(lang, { minimumFractionDigits: d, maximumFractionDigits: d, useGrouping: false }).format(n);
    if (bytes > 0 && value < 0.1 && d === 1) return `<${format(0.1)} ${unit}`;
    return `${format(Number(value.toFixed(d)))} ${unit}`;
  }

  function extensionOf(name) {
    const base = name.split(/[\\/]/).pop() || "";
    const dot = base.lastIndexOf(".");
    return dot > 0 ? base.slice(dot + 1).toLowerCase() : "";
  }

  /** Why the file is refused before it is sent, or null. */
  function refusal(file) {
    const extension = extensionOf(file.name);
    const allowed = extensions.map((e) => `.${e}`).join(", ");
    if (extensions.length > 0 && !extension) return say("noExtension", { allowed });
    if (extensions.length > 0 && !extensions.includes(extension)) return say("wrongExtension", { extension, allowed });
    if (maxBytes > 0 && file.size > maxBytes) {
      let digits = 1;
      while (digits < 3 && size(file.size, digits) === size(maxBytes, digits)) digits++;
      return say("tooLarge", { size: size(file.size, digits), limit: size(maxBytes, digits) });
    }
    return null;
  }

  /** One file's line: preview, name, progress, state, and its links once stored. A refused file gets no preview image. */
  function row(file, refused) {
    const blank = () => el("span", { class: "no-preview", "aria-hidden": "true" });
    let preview = blank();
    if (!refused) {
      const img = el("img", { alt: "" });
      const url = URL.createObjectURL(file);
      img.src = url;
      img.addEventListener("load", () => URL.revokeObjectURL(url), { once: true });
      img.addEventListener(
        "error",
        () => {
          URL.revokeObjectURL(url);
          if (img.isConnected) {
            const none = blank();
            img.replaceWith(none); // no broken-image icon for a file the browser cannot show
            preview = none;
          }
        },
        { once: true },
      );
      preview = img;
    }
    const progress = el("progress", { max: "100", value: "0", "aria-label": say("progressLabel", { name: file.name }) });
    const state = el("p", { class: "state", text: say("waiting") });
    const links = el("div", { class: "links" });
    const item = el(
      "li",
      { class: "upload", "data-name": file.name },
      preview,
      el("p", { class: "name", text: `${file.name} (${size(file.size)})` }),
      progress,
      state,
      links,
    );
    list.prepend(item);
    return {
      progress(fraction) {
        progress.value = Math.round(fraction * 100);
        state.textContent = say("uploading", { percent: Math.round(fraction * 100) });
      },
      processing() {
        progress.value = 100;
        state.textContent = say("processing");
      },
      failed(message) {
        item.classList.add("failed");
        progress.remove();
        state.textContent = say("refused", { message });
        state.setAttribute("role", "alert");
      },
      done(image) {
        item.classList.add("done");
        progress.remove();
        const thumb = el("img", { alt: image.origin_name });
        thumb.src = image.thumbnail_url;
        preview.replaceWith(thumb);
        preview = thumb;
        state.textContent = say("uploaded");
        const copy = (text, label, name) => el("button", { type: "button", class: "copy", "data-copy": text, "data-copy-name": name || label, text: label });
        // the address in a field, selectable without the script's copy, beside its copy buttons
        const id = `upload-url-${++uploads}`;
        const field = el("input", { type: "text", id, readonly: "", value: image.url, spellcheck: "false" });
        links.before(el("div", { class: "url-row" }, el("label", { for: id, text: "URL" }), field, copy(image.url, say("copy"), "URL")));
        links.append(
          el("a", { href: image.url, target: "_blank", rel: "noopener", text: say("open") }),
          copy(image.html, "HTML"),
          copy(image.bbcode, "BBCode"),
          copy(image.markdown, "Markdown"),
          copy(image.markdown_with_link, say("mdLink"), say("mdLinkName")),
        );
        // the <picture> snippet is built on the server (one function for this page and the image grid), not in the v1 answer
        responsive(image.key).then(
          (text) => links.append(copy(text, say("responsive"))),
          () => {}, // the other snippets still serve; the image grid offers this one too
        );
      },
    };
  }

  function send(file, token, line) {
    return new Promise((resolve) => {
      const xhr = new XMLHttpRequest();
      xhr.open("POST", "/api/v1/upload");
      xhr.setRequestHeader("Authorization", `Bearer ${token}`);
      xhr.setRequestHeader("Accept", "application/json");
      xhr.upload.addEventListener("progress", (e) => {
        if (e.lengthComputable) line.progress(e.loaded / e.total);
      });
      xhr.upload.addEventListener("load", () => line.processing());
      xhr.addEventListener("load", () => {
        let body = null;
        try {
          body = JSON.parse(xhr.responseText);
        } catch (_) {
          body = null;
        }
        resolve({ status: xhr.status, body });
      });
      xhr.addEventListener("error", () => resolve({ status: 0, body: null }));
      xhr.addEventListener("abort", () => resolve({ status: 0, body: null }));
      const data = new FormData();
      for (const [name, value] of fields()) data.append(name, value);
      data.append("file", file, file.name); // the small fields first, the file last
      xhr.send(data);
    });
  }

  async function uploadOne(file, line) {
    for (let attempt = 0; attempt < 2; attempt++) {
      let token;
      try {
        token = await uploadToken(attempt > 0);
      } catch (e) {
        line.failed(e.message);
        return;
      }
      const { status, body } = await send(file, token, line);
      if (status === 200 && body && body.status === true) {
        line.done(body.data);
        return;
      }
      if (status === 401 && attempt === 0) continue; // the token expired meanwhile: a fresh one, once
      line.failed(body?.message || (status === 0 ? say("connectionFailed") : say("serverAnsweredLower", { status })));
      return;
    }
  }

  const queue = [];
  let running = false;
  async function drain() {
    if (running) return;
    running = true;
    while (queue.length > 0) {
      const { file, line } = queue.shift();
      await uploadOne(file, line);
    }
    running = false;
  }

  function add(files) {
    for (const file of files) {
      const refused = refusal(file);
      const line = row(file, refused);
      if (refused) line.failed(refused);
      else queue.push({ file, line });
    }
    drain();
  }

  input.addEventListener("change", () => {
    add(Array.from(input.files || []));
    input.value = ""; // the same file may be chosen again
  });
  form.addEventListener("submit", (e) => e.preventDefault());

  for (const type of ["dragenter", "dragover"]) {
    zone.addEventListener(type, (e) => {
      e.preventDefault();
      zone.classList.add("over");
    });
  }
  for (const type of ["dragleave", "dragend"]) zone.addEventListener(type, () => zone.classList.remove("over"));
  zone.addEventListener("drop", (e) => {
    e.preventDefault();
    zone.classList.remove("over");
    add(Array.from(e.dataTransfer?.files || []));
  });
  // a file dropped beside the zone is not opened by the browser in place of the page
  for (const type of ["dragover", "drop"]) document.addEventListener(type, (e) => e.preventDefault());
})();
