/** What an upload takes and gives, and the refusals of its record step. */
import type { ImageRow } from "../../db/repositories/images.ts";
import type { Strategy } from "../../db/repositories/strategies.ts";
import { AppError } from "../../errors.ts";
import type { Extension } from "../../images/formats.ts";
import type { Caller } from "../caller.ts";

export interface UploadInput {
  caller: Caller;
  ip: string;
  file: { filename: string; contentType: string; bytes: Uint8Array };
  strategyId?: number;
  albumId?: number;
  isPublic: boolean;
  expiredAt?: Date;
}

/** What an accepted upload stored: the record, and the strategy it lives on. */
export interface StoredImage {
  image: ImageRow;
  strategy: Strategy;
}

/** The uploaded file as the checks see it. */
export interface Upload {
  bytes: Uint8Array;
  size: number;
  originName: string;
  extension: Extension;
  mimetype: string;
  /** The Content-Type the client declared for the part ("" when absent). */
  declaredType: string;
}

/** A refusal of the record step (capacity or frequency, checked again atomically): a 400 that knows its reason. */
export class RecordRefusal extends AppError {
  constructor(
    readonly reason: "capacity" | "frequency",
    message: string,
  ) {
    super("bad_request", message);
  }
}

export class QuotaExhausted extends AppError {
  constructor(strategy: Strategy) {
    super("bad_request", `The storage strategy "${strategy.name}" has not enough quota left.`);
  }
}

export const kb = (bytes: number) => Math.round((bytes / 1024) * 100) / 100;

/** Line breaks and tabs become spaces; other controls, bidirectional overrides and isolates, zero-width characters: invisible, and able to disguise a name. */
const invisible = /[\u0000-\u001f\u007f-\u009f\u061c\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff]/g;
const MAX_NAME = 255;

/** The name shown as `origin_name` and in snippets: the last path segment, without invisible characters, at most 255 characters with its extension kept. */
export function cleanFileName(filename: string): string {
  const name = (filename.split(/[\\/]/).pop() ?? "")
    .replace(/[\t\r\n]/g, " ")
    .replace(invisible, "")
    .trim();
  const chars = [...name];
  if (chars.length <= MAX_NAME) return name || "image";
  const extension = extensionOf(name);
  const suffix = extension && extension.length < 16 ? `.${extension}` : "";
  return chars.slice(0, MAX_NAME - suffix.length).join("") + suffix;
}

export function extensionOf(filename: string): string {
  const base = filename.split(/[\\/]/).pop() ?? "";
  const dot = base.lastIndexOf(".");
  return dot > 0 ? base.slice(dot + 1).toLowerCase() : "";
}
