import type { Group } from "../db/repositories/groups.ts";
import { badRequest } from "../errors.ts";
import { logFor } from "../observability/log.ts";

/**
 * Content review configured for the group. `webhook`: the image is POSTed (raw bytes, its media type as
 * Content-Type, X-Image-Name and X-Uploader headers) and the answer must be JSON `{allow, reason?}`.
 * A timeout, a non-2xx or an unreadable answer follows the group's fail-open setting.
 */
export async function reviewContent(group: Group, image: { bytes: Uint8Array; mimetype: string; originName: string; uploader: string }): Promise<void> {
  if (group.reviewProvider !== "webhook" || !group.reviewWebhookUrl) return;
  let verdict: { allow?: unknown; reason?: unknown };
  try {
    const res = await fetch(group.reviewWebhookUrl, {
      method: "POST",
      body: image.bytes as Uint8Array<ArrayBuffer>,
      headers: {
        "content-type": image.mimetype,
        "x-image-name": encodeURIComponent(image.originName),
        "x-uploader": image.uploader,
      },
      signal: AbortSignal.timeout(group.reviewTimeoutMs),
      redirect: "error",
    });
    if (!res.ok) throw new Error(`review webhook answered ${res.status}`);
    verdict = (await res.json()) as typeof verdict;
    if (typeof verdict?.allow !== "boolean") throw new Error("review webhook answer has no boolean `allow`");
  } catch (e) {
    const failOpen = group.reviewFailOpen;
    logFor({}).warn({ err: e, group_id: group.id }, `content review unavailable; ${failOpen ? "accepting (fail-open)" : "refusing (fail-closed)"}`);
    if (failOpen) return;
    throw badRequest("Content review is unavailable; try again later.");
  }
  if (!verdict.allow) {
    const reason = typeof verdict.reason === "string" && verdict.reason ? `: ${verdict.reason.slice(0, 200)}` : ".";
    throw badRequest(`The image was rejected by content review${reason}`);
  }
}
