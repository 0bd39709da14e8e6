/**
 * Upload: the page sends each file to POST /api/v1/upload itself (upload.js), with a short-lived temporary upload
 * token that it obtains here for the signed-in account. There is no second upload path: every check and refusal is
 * the API's. The script's words come from the catalogs: one script file per language, its words before upload.js,
 * kept by the browser like the other assets.
 */
import type { Hono } from "hono";
import { ALBUMS_PER_ACCOUNT } from "../db/repositories/albums.ts";
import { findImageForOwner } from "../db/repositories/images.ts";
import { listAlbumsForOwner } from "../db/repositories/sessions.ts";
import { getStrategy, listUsableStrategies } from "../db/repositories/strategies.ts";
import { notFound } from "../errors.ts";
import { toImageResource } from "../http/image-resource.ts";
import { responsiveSnippet } from "../http/responsive-snippet.ts";
import { respond } from "../http/envelope.ts";
import { formatDateTime } from "../http/time.ts";
import { issueAccountTemporaryTokens } from "../services/tokens.ts";
import { durationText, scriptInLanguages, Notice, Layout, RadioGroup, Select, TextInput } from "./components/index.ts";
import { type MessageKey, num, rich, t, view } from "./i18n/index.ts";
import { BASE, requireSession, type WebEnv } from "./session.ts";

/** Albums offered in the upload form at most (by name). */
const ALBUMS_LISTED = ALBUMS_PER_ACCOUNT;

/** How long the page's upload token lives (never beyond the session): long enough for a batch, short if it leaks. */
const PAGE_TOKEN_SECONDS = 15 * 60;

/**
 * The one unit of sizes on the upload page (the limit, each file, each refusal): MB when the group's limit is at
 * least 1 MB, else KB; one decimal (units of 1024, as the API's KB). upload.js writes sizes the same way.
 */
const sizeUnitFor = (maxBytes: number): "MB" | "KB" => (maxBytes >= 1024 * 1024 ? "MB" : "KB");

function sizeIn(bytes: number, unit: "MB" | "KB"): string {
  const value = bytes / (unit === "MB" ? 1024 * 1024 : 1024);
  return `${num(value, { minimumFractionDigits: 1, maximumFractionDigits: 1, useGrouping: false })} ${unit}`;
}

/** What upload.js writes, formatted here; `{name}`-style holes are filled in by the script. */
const SCRIPT_MESSAGES = [
  "sessionEnded",
  "serverAnswered",
  "noExtension",
  "wrongExtension",
  "tooLarge",
  "progressLabel",
  "waiting",
  "uploading",
  "processing",
  "refused",
  "uploaded",
  "open",
  "connectionFailed",
  "serverAnsweredLower",
  "copy",
] as const;
const HOLES = {
  status: "{status}",
  allowed: "{allowed}",
  extension: "{extension}",
  size: "{size}",
  limit: "{limit}",
  name: "{name}",
  percent: "{percent}",
  message: "{message}",
};

/** upload.js with its words, in each language. */
const uploadScripts = scriptInLanguages("upload.js", "uploadMessages", () => ({
  ...Object.fromEntries(SCRIPT_MESSAGES.map((k) => [k, t(`upload.js.${k}` as MessageKey, HOLES)])),
  mdLink: t("images.snippet.mdLinkShort"),
  mdLinkName: t("images.snippet.mdLink"),
  responsive: t("images.snippet.responsive"),
}));

export function register(web: Hono<WebEnv>) {
  web.get("/upload", requireSession, async (c) => {
    const signedIn = c.get("signedIn");
    const { db } = c.get("deps");
    const { group } = signedIn;
    const [strategies, albums] = await Promise.all([listUsableStrategies(db, group.id), listAlbumsForOwner(db, signedIn.user.id, ALBUMS_LISTED)]);
    const accept = group.allowedExtensions.map((e) => `.${e}`).join(",");
    const maxBytes = group.maxFileSizeKb * 1024;
    const unit = sizeUnitFor(maxBytes);
    return c.html(
      <Layout title={t("upload.title")} signedIn={signedIn} active="upload" scripts={[uploadScripts[view().locale].href]}>
        <noscript>
          <Notice kind="error">{t("upload.noscript")}</Notice>
        </noscript>
        <form
          id="upload-form"
          class="card"
          action="/api/v1/upload"
          method="post"
          enctype="multipart/form-data"
          data-token-url={`${BASE}/upload/token`}
          data-snippets-url={`${BASE}/upload/snippets/`}
          data-max-bytes={String(maxBytes)}
          data-extensions={group.allowedExtensions.join(",")}
          data-size-unit={unit}
        >
          <fieldset class="options">
            <legend>{t("upload.options")}</legend>
            <Select
              name="strategy_id"
              label={t("upload.storage")}
              hint={strategies.length === 0 ? t("upload.storage.none") : t("upload.storage.auto")}
              options={[["", t("upload.storage.automatic")], ...strategies.map((s) => [String(s.id), s.name] as const)]}
            />
            <Select name="album_id" label={t("upload.album")} options={[["", t("upload.album.none")], ...albums.map((a) => [String(a.id), a.name] as const)]} />
            <RadioGroup
              name="permission"
              legend={t("upload.visibility")}
              value="1"
              options={[
                ["1", t("upload.visibility.public")],
                ["0", t("upload.visibility.private")],
              ]}
            />
            <TextInput
              name="expired_at"
              type="datetime-local"
              label={t("upload.expiry")}
              hint={
                group.retentionMaxSeconds === null
                  ? t("upload.expiry.keep")
                  : t("upload.expiry.retention", { duration: durationText(group.retentionMaxSeconds) })
              }
            />
          </fieldset>
          <div id="drop-zone" class="drop-zone">
            <label for="files">{t("upload.choose")}</label>
            <input id="files" name="file" type="file" multiple accept={accept} aria-describedby="files-hint" />
            <small id="files-hint" class="hint">
              {rich("upload.filesHint", {
                extensions: group.allowedExtensions.join(", "),
                size: <span data-testid="max-size">{sizeIn(maxBytes, unit)}</span>,
              })}
            </small>
          </div>
        </form>
        <section aria-labelledby="uploads-title">
          <h2 id="uploads-title" class="visually-hidden">
            {t("upload.uploads")}
          </h2>
          <ul id="upload-list" class="uploads" aria-live="polite"></ul>
        </section>
      </Layout>,
    );
  });

  /** One temporary upload token for the page, bound to the session: signing out ends it. JSON for upload.js. */
  web.post("/upload/token", requireSession, async (c) => {
    const { session, user } = c.get("signedIn");
    const { db, clock } = c.get("deps");
    const now = clock();
    const seconds = Math.max(1, Math.min(PAGE_TOKEN_SECONDS, Math.floor((session.expiresAt.getTime() - now.getTime()) / 1000)));
    const [issued] = await issueAccountTemporaryTokens(db, user.id, 1, seconds, now, session.id);
    c.header("Cache-Control", "no-store");
    return respond(c, { token: issued!.token, expired_at: formatDateTime(issued!.expiredAt), expires_in: seconds });
  });

  /**
   * The snippets of an uploaded image that the v1 answer does not carry (the "Responsive HTML" one), built by the same
   * function as the image grid's; JSON for upload.js. The owner's images only: another's is a 404 like a missing one.
   */
  web.get("/upload/snippets/:key", requireSession, async (c) => {
    const { user } = c.get("signedIn");
    const deps = c.get("deps");
    const key = c.req.param("key");
    const image = /\p{Cc}/u.test(key) ? null : await findImageForOwner(deps.db, key, user.id);
    const strategy = image ? await getStrategy(deps.db, image.strategyId) : null;
    if (!image || !strategy) throw notFound(t("upload.noSuchImage"));
    c.header("Cache-Control", "no-store");
    return respond(c, { responsive_html: responsiveSnippet(toImageResource(image, strategy, deps.storage, deps.config.baseUrl), deps.config.baseUrl) });
  });
}
