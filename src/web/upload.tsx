/**
 * Upload: the page sends each file to POST /api/v1/upload itself (upload.js), with a short-lived temporary upload
 * token that it obtains here for the signed-in account. There is no second upload path: every check and refusal is
 * the API's.
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
import { assets, Field, Layout } from "./components/index.ts";
import { BASE, requireSession, type WebEnv } from "./session.ts";

/** Albums offered in the upload form at most (by name). */
const ALBUMS_LISTED = ALBUMS_PER_ACCOUNT;

/** How long the page's upload token lives (never beyond the session): long enough for a batch, short if it leaks. */
const PAGE_TOKEN_SECONDS = 15 * 60;

function duration(seconds: number): string {
  if (seconds % 86_400 === 0) return `${seconds / 86_400} day${seconds === 86_400 ? "" : "s"}`;
  if (seconds % 3600 === 0) return `${seconds / 3600} hour${seconds === 3600 ? "" : "s"}`;
  if (seconds % 60 === 0) return `${seconds / 60} minute${seconds === 60 ? "" : "s"}`;
  return `${seconds} seconds`;
}

/**
 * The one unit of sizes on the upload page (the limit, each file, each refusal): MB when the group's limit is at
 * least 1 MB, else KB; one decimal (units of 1024, as the API's KB). upload.js writes sizes the same way.
 */
const sizeUnitFor = (maxBytes: number): "MB" | "KB" => (maxBytes >= 1024 * 1024 ? "MB" : "KB");

function sizeIn(bytes: number, unit: "MB" | "KB"): string {
  const value = bytes / (unit === "MB" ? 1024 * 1024 : 1024);
  return `${value.toFixed(1)} ${unit}`;
}

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
      <Layout title="Upload" signedIn={signedIn} active="upload" scripts={[assets.upload.href]}>
        <noscript>
          <p class="notice error">This page needs JavaScript to upload. Without it, use the API with a token from the API tokens page.</p>
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
            <legend>Options (optional)</legend>
            <Field
              label="Storage"
              id="strategy_id"
              hint={strategies.length === 0 ? "Your group has no storage strategy: uploads will be refused." : "Automatic: the first with space left."}
            >
              <select id="strategy_id" name="strategy_id">
                <option value="">Automatic</option>
                {strategies.map((s) => (
                  <option value={String(s.id)}>{s.name}</option>
                ))}
              </select>
            </Field>
            <Field label="Album" id="album_id">
              <select id="album_id" name="album_id">
                <option value="">None</option>
                {albums.map((a) => (
                  <option value={String(a.id)}>{a.name}</option>
                ))}
              </select>
            </Field>
            <fieldset class="field radios">
              <legend>Visibility</legend>
              <label>
                <input type="radio" name="permission" value="1" checked /> Public
              </label>
              <label>
                <input type="radio" name="permission" value="0" /> Private (unlisted)
              </label>
            </fieldset>
            <Field
              label="Delete automatically at"
              id="expired_at"
              hint={
                group.retentionMaxSeconds === null
                  ? "Empty: keep it."
                  : `Empty: after ${duration(group.retentionMaxSeconds)}, the longest your group keeps an image.`
              }
            >
              <input id="expired_at" name="expired_at" type="datetime-local" aria-describedby="expired_at-hint" />
            </Field>
          </fieldset>
          <div id="drop-zone" class="drop-zone">
            <label for="files">Choose images, or drop them here</label>
            <input id="files" name="file" type="file" multiple accept={accept} aria-describedby="files-hint" />
            <small id="files-hint" class="hint">
              {group.allowedExtensions.join(", ")} · up to <span data-testid="max-size">{sizeIn(maxBytes, unit)}</span> each. Uploads start as soon as you
              choose; a file too large or of another type is refused before it is sent.
            </small>
          </div>
        </form>
        <section aria-labelledby="uploads-title">
          <h2 id="uploads-title" class="visually-hidden">
            Uploads
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
    if (!image || !strategy) throw notFound("No such image.");
    c.header("Cache-Control", "no-store");
    return respond(c, { responsive_html: responsiveSnippet(toImageResource(image, strategy, deps.storage, deps.config.baseUrl), deps.config.baseUrl) });
  });
}
