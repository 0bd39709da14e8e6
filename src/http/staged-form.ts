/**
 * An application/x-www-form-urlencoded upload body (a base64 `source`, as Chevereto and ImgBB clients send it), read
 * without trusting its sender, like readStagedMultipart: while the sender is unknown only the first `preludeLimit`
 * bytes are read, and the parameters complete within them are what `limitFor` authenticates from.
 */
import { AppError } from "../errors.ts";
import { BodyTooLarge, clientGone, markReadWhole, readBefore } from "./multipart.ts";

interface StagedFormRead {
  /** Most bytes read while the sender is still unknown. */
  preludeLimit: number;
  /** Called once, with the parameters complete within the prelude: authenticates and answers how many bytes this sender may send in all. */
  limitFor(fieldsBeforeFile: Map<string, string>): Promise<number>;
  /** The whole body must arrive within this many seconds. */
  deadlineSeconds: number;
}

/** The parameters of a form body, the first of each name kept. */
function formFields(text: string): Map<string, string> {
  const fields = new Map<string, string>();
  for (const [name, value] of new URLSearchParams(text)) if (!fields.has(name)) fields.set(name, value);
  return fields;
}

/** The parameters of a partial body that are complete: those followed by `&`. */
function completeFields(buf: Buffer): Map<string, string> {
  const text = buf.toString("utf8");
  const end = text.lastIndexOf("&");
  return formFields(end < 0 ? "" : text.slice(0, end));
}

export async function readStagedForm(request: Request, read: StagedFormRead): Promise<{ fields: Map<string, string>; bytesRead: number }> {
  if (!request.body) {
    await read.limitFor(new Map());
    return { fields: new Map(), bytesRead: 0 };
  }
  const reader = request.body.getReader();
  const deadlineMs = read.deadlineSeconds * 1000;
  const deadline = Date.now() + deadlineMs;
  const chunks: Uint8Array[] = [];
  let total = 0;
  let limit: number | null = null;
  const settleLimit = async (fields: Map<string, string>) => {
    limit = await read.limitFor(fields);
    const declared = Number(request.headers.get("content-length"));
    if (Number.isFinite(declared) && declared > limit) throw new BodyTooLarge(limit);
  };
  try {
    for (;;) {
      const { done, value } = await readBefore(reader, deadline, deadlineMs);
      if (done) {
        markReadWhole(request);
        break;
      }
      chunks.push(value);
      total += value.byteLength;
      if (limit === null && total > read.preludeLimit) await settleLimit(completeFields(Buffer.concat(chunks, total).subarray(0, read.preludeLimit)));
      if (limit !== null && total > limit) throw new BodyTooLarge(limit);
    }
    const fields = formFields(Buffer.concat(chunks, total).toString("utf8"));
    // a body within the prelude was read whole before its sender was known: every parameter of it came before the file
    if (limit === null) await settleLimit(fields);
    return { fields, bytesRead: total };
  } catch (e) {
    await reader.cancel().catch(() => {});
    throw e instanceof AppError ? e : clientGone();
  }
}
