/**
 * Serving stored objects at BASE_URL/i/<path>: what to answer for a path (and a variant query), decided here; the
 * answer's HTTP form (validators, ranges, cache headers) is http/object-response.ts, the request's parsing
 * routes/site/serve-object.ts. The record's facts are looked up once and kept: a stored name is never reused, and
 * what a request must not get wrong is checked on every request without the database — the file must still exist
 * (a delete removes it before it answers, on every instance sharing the volume) and the expiry, kept with the facts,
 * must not have passed.
 */
import type { BunFile } from "bun";
import { findImageByStoredPath } from "../../db/repositories/images.ts";
import type { Strategy } from "../../db/repositories/strategies.ts";
import type { VariantRow } from "../../db/repositories/variants.ts";
import type { VariantFormat } from "../../db/schema.ts";
import type { Deps } from "../../deps.ts";
import { AppError } from "../../errors.ts";
import { frameCount } from "../../images/frames.ts";
import { type Variants, VariantUnavailable } from "../variants/maker.ts";
import { fallbackFormats, resolveVariant, type VariantQuery, type VariantSource, variantKey, variantMime } from "../variants/query.ts";

/**
 * A fallback (served when a variant cannot be had now) is cached this long only, never `immutable`: the better
 * format, made in the background, replaces it at the same address (docs/decisions/variant-fallback.md).
 */
export const FALLBACK_MAX_AGE = 60;

/** What serving an object needs to know of its record: facts fixed at upload, so they can be kept. */
interface ObjectFacts {
  strategy: Pick<Strategy, "id" | "driver" | "config">;
  mimetype: string;
  etag: string;
  lastModified: Date;
  /** The original's own headers, made once: serving a kept object allocates no header strings. */
  own: { "content-type": string; etag: string; "last-modified": string };
  expiredAt: Date | null;
  /** An original (not a thumbnail): what its variants are made of. */
  source: (VariantSource & { sha1: string; animationRead?: boolean }) | null;
}

/** What to answer: nothing, a stored file (with its validators), or the address where its storage serves it. */
export type Served =
  | { kind: "missing" }
  | {
      kind: "file";
      blob: BunFile;
      facts: ObjectFacts;
      own: { "content-type": string; etag: string; "last-modified": string; vary?: string };
      /** A fallback's lifetime in seconds (never immutable); the object's own otherwise. */
      shortMaxAge?: number;
    }
  | { kind: "redirect"; location: string; vary?: { vary: string }; maxAge?: number };

const CACHED_OBJECTS = 50_000;
const MISSING: Served = { kind: "missing" };
const unexpired = (facts: ObjectFacts, now: Date) => (facts.expiredAt && facts.expiredAt.getTime() <= now.getTime() ? null : facts);
const secondOf = (d: Date) => new Date(Math.floor(d.getTime() / 1000) * 1000);

export class ObjectServer {
  private readonly known = new Map<string, ObjectFacts>();
  /** Variants known to exist, by variantKey: their rows, fixed once made (a lost object drops the entry). */
  private readonly knownVariants = new Map<string, VariantRow>();

  constructor(
    private readonly deps: Deps,
    private readonly variants: Variants,
  ) {}

  /** The facts of the object stored at `path` (kept), or null when there is none or it has expired. */
  /**
   * The facts of the object stored at `path`, or null when there is none or it has expired: at once when they are
   * kept (the hot path takes no promise for them), from the database otherwise.
   */
  find(path: string, now: Date): ObjectFacts | null | Promise<ObjectFacts | null> {
    const kept = this.known.get(path);
    if (kept) return unexpired(kept, now);
    return this.factsOf(path).then((facts) => facts && unexpired(facts, now));
  }

  /** The object itself (an original or a thumbnail), when its file is still there. */
  async original(path: string, facts: ObjectFacts): Promise<Served> {
    const blob = this.deps.storage.for(facts.strategy).readableFile(path);
    if (!blob || !(await blob.exists())) {
      this.known.delete(path);
      return MISSING;
    }
    return { kind: "file", blob, facts, own: facts.own };
  }

  /**
   * A variant: the query was parsed (a 400 before the database for anything outside the grammar); made on its first
   * request, then served like an original from the image's own storage — or, where the storage serves its own
   * addresses (S3), by a redirect to the stored object, as the image's own `url` points there. A variant that cannot
   * be had now is answered with a fallback, never an error the client cannot fix.
   */
  async variant(path: string, facts: ObjectFacts, query: VariantQuery, accept: string | null, client: () => string): Promise<Served> {
    const { deps, known, knownVariants, variants } = this;
    const source = facts.source;
    if (!source) throw new AppError("bad_request", "Variants are made of images, not of their thumbnails.");
    // a GIF of several frames: its variants keep the animation (a header read, once per image, on its first variant)
    if (source.image.mimetype === "image/gif" && !source.animationRead) {
      source.animated = await this.isAnimated(facts.strategy, path);
      source.animationRead = true;
    }
    const vary = query.format === "auto" ? { vary: "Accept" } : undefined;
    const resolved = resolveVariant(source, query, accept);
    const storage = deps.storage.for(facts.strategy);
    // a storage that serves its own addresses (S3): nothing here can see its object vanish, so before pointing at it,
    // the record must still be there (one query) — a deleted image's variants stop at once on every instance
    const gone = async () => {
      if (await findImageByStoredPath(deps.db, path)) return false;
      known.delete(path);
      for (const k of knownVariants.keys()) if (k.startsWith(`${source.image.id}:`)) knownVariants.delete(k);
      return true;
    };
    if (resolved.original) {
      const blob = storage.readableFile(path);
      if (!blob) return (await gone()) ? MISSING : { kind: "redirect", location: storage.url(path), vary };
      if (!(await blob.exists())) {
        known.delete(path);
        return MISSING;
      }
      return {
        kind: "file",
        blob,
        facts,
        own: { ...facts.own, ...vary },
      };
    }
    const key = variantKey(source.image.id, resolved.width, resolved.format);
    for (let attempt = 0; ; attempt++) {
      let row = knownVariants.get(key);
      if (!row) {
        try {
          row = await variants.obtain(source, resolved.width, resolved.format, client());
        } catch (e) {
          if (!(e instanceof VariantUnavailable)) throw e;
          return this.fallback(path, facts, source, resolved.width, resolved.format, vary, gone);
        }
      }
      const blob = storage.readableFile(row.path);
      if (!blob) {
        if (await gone()) return MISSING;
        this.remember(key, row);
        return { kind: "redirect", location: storage.url(row.path), vary };
      }
      if (!(await blob.exists())) {
        knownVariants.delete(key);
        known.delete(path);
        // the image was deleted (its facts are stale), or the variant's object was lost: made again, once
        if (attempt > 0 || !(await findImageByStoredPath(deps.db, path))) return MISSING;
        await variants.forget(row);
        continue;
      }
      this.remember(key, row);
      const etag = `"v-${source.sha1}-${resolved.width}-${resolved.format}"`;
      return {
        kind: "file",
        blob,
        facts,
        own: { "content-type": variantMime(resolved.format), etag, "last-modified": secondOf(row.createdAt).toUTCString(), ...vary },
      };
    }
  }

  /**
   * What stands in for a variant that cannot be had now: the stored variant of the next format down the chain
   * (AVIF, then WebP, then the original's format) at the same width, else the original itself; never generated
   * here (the background does that), so a fallback costs what serving a stored object costs. Cached FALLBACK_MAX_AGE
   * seconds, not remembered as the variant.
   */
  private async fallback(
    path: string,
    facts: ObjectFacts,
    source: NonNullable<ObjectFacts["source"]>,
    width: number,
    format: VariantFormat,
    vary: { vary: string } | undefined,
    gone: () => Promise<boolean>,
  ): Promise<Served> {
    const storage = this.deps.storage.for(facts.strategy);
    for (const f of fallbackFormats(source, format)) {
      const key = variantKey(source.image.id, width, f);
      const row = this.knownVariants.get(key) ?? (await this.variants.stored(source, width, f).catch(() => null));
      if (!row) continue;
      const blob = storage.readableFile(row.path);
      if (!blob) {
        if (await gone()) return MISSING;
        return { kind: "redirect", location: storage.url(row.path), vary, maxAge: FALLBACK_MAX_AGE };
      }
      if (!(await blob.exists())) continue;
      this.remember(key, row);
      const etag = `"v-${source.sha1}-${width}-${f}"`;
      const own = { "content-type": variantMime(f), etag, "last-modified": secondOf(row.createdAt).toUTCString(), ...vary };
      return { kind: "file", blob, facts, own, shortMaxAge: FALLBACK_MAX_AGE };
    }
    const blob = storage.readableFile(path);
    if (!blob) return (await gone()) ? MISSING : { kind: "redirect", location: storage.url(path), vary, maxAge: FALLBACK_MAX_AGE };
    if (!(await blob.exists())) {
      this.known.delete(path);
      return MISSING;
    }
    const own = { ...facts.own, ...vary };
    return { kind: "file", blob, facts, own, shortMaxAge: FALLBACK_MAX_AGE };
  }

  private async factsOf(path: string): Promise<ObjectFacts | null> {
    const cached = this.known.get(path);
    if (cached) return cached;
    const found = await findImageByStoredPath(this.deps.db, path);
    if (!found) return null;
    const { image, strategy } = found;
    const isThumbnail = path !== image.path;
    const mimetype = isThumbnail ? "image/webp" : image.mimetype;
    const etag = `"${isThumbnail ? "t-" : ""}${image.sha1}"`;
    const lastModified = secondOf(image.createdAt);
    const facts: ObjectFacts = {
      strategy,
      mimetype,
      etag,
      lastModified,
      own: { "content-type": mimetype, etag, "last-modified": lastModified.toUTCString() },
      expiredAt: image.expiredAt,
      source: isThumbnail
        ? null
        : {
            image: { id: image.id, path: image.path, mimetype: image.mimetype, width: image.width, height: image.height, userId: image.userId },
            strategy,
            animated: false,
            sha1: image.sha1,
          },
    };
    if (this.known.size >= CACHED_OBJECTS) this.known.delete(this.known.keys().next().value!);
    this.known.set(path, facts);
    return facts;
  }

  private remember(key: string, row: VariantRow) {
    if (this.knownVariants.has(key)) return;
    if (this.knownVariants.size >= CACHED_OBJECTS) this.knownVariants.delete(this.knownVariants.keys().next().value!);
    this.knownVariants.set(key, row);
  }

  /** Whether a GIF has several frames, from its header (the stored object of a local strategy, or its address). */
  private async isAnimated(strategy: ObjectFacts["strategy"], path: string): Promise<boolean> {
    try {
      const storage = this.deps.storage.for(strategy);
      const file = storage.readableFile(path);
      const input = file ? file.name! : new Uint8Array(await (await fetch(storage.url(path))).arrayBuffer());
      return (await frameCount(input)) > 1;
    } catch {
      return true; // unreadable here: the stricter answer (only animation-keeping formats)
    }
  }
}
