/**
 * Receiving an upload's body without trusting its sender (docs/decisions/cost-before-trust.md), for every upload
 * route: the v1 upload and the Chevereto/ImgBB dialect read their bodies through here.
 */
import type { Context } from "hono";
import { badRequest } from "../errors.ts";
import { tagRefusal } from "../observability/metrics.ts";
import type { Caller } from "../services/caller.ts";
import { subjectOf, takeUploadSlot } from "../services/upload/index.ts";
import { addressBucket, authenticate, clientIp, guardedAuth } from "./auth.ts";
import { BodyTooLarge } from "./multipart.ts";
import type { AppEnv } from "./types.ts";

/** An upload accepts a temporary upload token, and a guest when guest upload is on. */
export const uploadAccess = { temporary: true, guest: true };
/** What a sender not yet known may send before its file: the small fields (`token`, `key`, `strategy_id`, …). */
export const PRELUDE_LIMIT = 64 * 1024;
export const DEFAULT_READ_TIMEOUT_SECONDS = 60;

interface Receive<B> {
  /**
   * Reads the body. It calls `limitFor` once, with the small fields sent before the file (at most PRELUDE_LIMIT
   * bytes of them while the sender is unknown), and stops reading once the body passes the number it answers.
   */
  read(limitFor: (fieldsBeforeFile: Map<string, string>) => Promise<number>): Promise<B>;
  /** The credential a field before the file carries, or null. */
  credential(fieldsBeforeFile: Map<string, string>): string | null;
  /** Bytes of body a known caller whose group allows `maxFileSizeKb` per image may send in all. */
  allowance(maxFileSizeKb: number): number;
  /** What a sender refused for sending no credential at all is told (where the credential field must be). */
  noCredential?(e: unknown): unknown;
}

/**
 * Cost before trust: a sender known from its header (the handler's `caller`) takes its group's concurrency slot and
 * one of its body slots before a byte of the body is read, and may send its own group's allowance; otherwise only
 * the small fields before the file are read, the credential field (or guest upload) decides who it is, and it takes
 * the same slots before its file is read — never more than that caller's group allows. Bodies are bounded per
 * address, per caller and in total, and in time. Returns the concurrency slot's release: the caller holds it until
 * its answer.
 */
export async function receiveUploadBody<B>(c: Context<AppEnv>, receive: Receive<B>): Promise<{ caller: Caller; body: B; releaseSlot: () => Promise<void> }> {
  const deps = c.get("deps");
  const gate = c.get("uploadBodies");
  const ip = clientIp(c);
  let caller: Caller | undefined = c.get("caller");
  let limitKb = 0;
  const leave: (() => void)[] = [];
  let releaseSlot: (() => Promise<void>) | null = null;
  // the group's slot first: a caller at its group's limit is told so (400), whatever its share of the total
  const claim = async (known: Caller, counted: boolean) => {
    releaseSlot = await takeUploadSlot(deps, known, ip);
    leave.push(counted ? gate.enterCaller(subjectOf(known, ip)) : gate.holdCaller(subjectOf(known, ip)));
  };
  try {
    if (caller) {
      await claim(caller, true);
    } else {
      leave.push(gate.enterStranger(addressBucket(ip)));
    }
    const body = await receive.read(async (fields) => {
      if (!caller) {
        const token = receive.credential(fields);
        caller = await guardedAuth(c, token !== null, () => authenticate(deps, token, uploadAccess)).catch((e) => {
          throw token === null && receive.noCredential ? receive.noCredential(e) : e;
        });
        await claim(caller, false);
      }
      limitKb = caller.group.maxFileSizeKb;
      return receive.allowance(limitKb);
    });
    return { caller: caller!, body, releaseSlot: releaseSlot ?? (async () => {}) };
  } catch (e) {
    await (releaseSlot as (() => Promise<void>) | null)?.();
    if (e instanceof BodyTooLarge) throw tagRefusal(badRequest(`The file is larger than the limit of ${limitKb} KB.`), "too_large");
    throw e;
  } finally {
    for (const l of leave) l();
  }
}
