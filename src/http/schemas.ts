import { z } from "@hono/zod-openapi";
import { intField } from "./validation.ts";

export const dateTime = z
  .string()
  .regex(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/)
  .openapi({ description: "`YYYY-MM-DD HH:MM:SS` in the server's time zone", example: "2026-11-22 10:30:00" });

/** Every answer's shape (contract 2.1); each operation's success schema narrows `data`. */
export const Envelope = z
  .object({
    status: z.boolean().openapi({ description: "true on success, false on failure" }),
    message: z.string().openapi({ description: "`success` on success; a human-readable reason on failure" }),
    data: z.unknown().openapi({ description: "The payload on success; null on failure" }),
  })
  .openapi("Envelope", { description: "Callers must check both the HTTP status code and `status`." });

export const ErrorEnvelope = Envelope.extend({
  status: z.literal(false),
  message: z.string().openapi({ description: "Human-readable reason", example: "Unauthenticated." }),
  data: z.null(),
  request_id: z.string().optional().openapi({ description: "Present on 500 answers; the server log carries the same id" }),
}).openapi("ErrorEnvelope", { description: "Failure envelope: `status` false, a reason in `message`, `data` null." });

export const ValidationError = Envelope.extend({
  status: z.literal(false),
  message: z.string().openapi({ example: "The per page field must be between 1 and 100." }),
  data: z.null(),
  errors: z.record(z.string(), z.array(z.string())).openapi({
    description: "Field name → messages. Nested fields are joined with dots.",
    example: { per_page: ["The per page field must be between 1 and 100."] },
  }),
}).openapi("ValidationError", { description: "HTTP 422: a field is missing, has the wrong type or is out of range." });

/** The success envelope around a named payload schema. */
export function envelope<T extends z.ZodType>(data: T, name: string) {
  return Envelope.extend({
    status: z.literal(true),
    message: z.literal("success"),
    data,
  }).openapi(name);
}

export const Profile = z
  .object({
    username: z.string().openapi({ example: "alice" }),
    name: z.string().openapi({ example: "Alice" }),
    avatar: z.url().openapi({ example: "https://www.gravatar.com/avatar/ff8d9819fc0e12bf0d24892e45987e249a28dce836a85cad60e28eaaa8c6d976?d=identicon" }),
    email: z.string().openapi({ example: "alice@example.com" }),
    capacity: z.number().openapi({ description: "Total capacity, KB", example: 1048576 }),
    size: z.number().openapi({ description: "Used space, KB (may be fractional)", example: 120.5 }),
    url: z.url().openapi({
      description: "The user's dashboard in the user center of this site (sign in with the account's password).",
      example: "https://img.example.com/user/dashboard",
    }),
    image_num: z.number().int().openapi({ example: 3 }),
    album_num: z.number().int().openapi({ example: 1 }),
    registered_ip: z.string().openapi({ example: "203.0.113.7" }),
  })
  .openapi("Profile");

export const Strategy = z
  .object({
    id: z.number().int().openapi({ example: 1 }),
    name: z.string().openapi({ example: "Local" }),
  })
  .openapi("Strategy");

export const TemporaryToken = z
  .object({
    token: z.string().openapi({ example: "Xb1sQ9v0mS2r3Jc5k8WnZt7yLp4aHd6gFe1uR0qC" }),
    expired_at: dateTime,
  })
  .openapi("TemporaryToken");

const ImageLinks = z
  .object({
    url: z.url(),
    thumbnail_url: z.url(),
    html: z.string(),
    bbcode: z.string(),
    markdown: z.string(),
    markdown_with_link: z.string(),
    delete_url: z.url(),
  })
  .openapi("ImageLinks", { description: "The same addresses and snippets, where existing uploaders (PicGo, ShareX) read them." });

export const Image = z
  .object({
    key: z.string().openapi({ description: "Image identifier, used in the delete path", example: "Qm7cX2kP9aLr4TzB" }),
    name: z.string().openapi({
      description: "Stored file name with extension: the stored format's (`.webp` when the group converts to WebP)",
      example: "x1Hq9ZL0cV2mN4bR7tWs.png",
    }),
    origin_name: z
      .string()
      .openapi({ description: "Uploaded file name, as sent (even when the group's processing changed the format)", example: "screenshot.png" }),
    size: z.number().openapi({
      description:
        "KB (may be fractional) of the stored bytes, which `url` serves: after the group's metadata policy and processing on upload, so it may differ from the upload as sent. Quotas and capacity are charged by it.",
      example: 42.53,
    }),
    mimetype: z.string().openapi({ description: "Of the stored image (a group that converts uploads stores its target format)", example: "image/png" }),
    extension: z.string().openapi({ description: "Of the stored image, without the dot", example: "png" }),
    width: z
      .number()
      .int()
      .openapi({ description: "Of the stored image, as displayed (EXIF orientation applied; after any downscale of the group's processing)", example: 800 }),
    height: z
      .number()
      .int()
      .openapi({ description: "Of the stored image, as displayed (EXIF orientation applied; after any downscale of the group's processing)", example: 600 }),
    md5: z.string().openapi({
      description: "MD5 of the stored bytes (what `url` serves); the same upload gives the same stored bytes every time",
      example: "9e107d9d372bb6826bd81d3542a419d6",
    }),
    sha1: z.string().openapi({ description: "SHA-1 of the stored bytes (what `url` serves)", example: "2fd4e1c67a2d28fced849ee1bb76e7391b93eb12" }),
    is_public: z.boolean(),
    expired_at: dateTime.nullable().openapi({ description: "When the image is removed; null = kept until deleted" }),
    created_at: dateTime,
    pathname: z.string().openapi({ description: "Path of the object on its strategy", example: "2026/11/22/x1Hq9ZL0cV2mN4bR7tWs.png" }),
    url: z.url().openapi({ example: "https://img.example.com/i/2026/11/22/x1Hq9ZL0cV2mN4bR7tWs.png" }),
    thumbnail_url: z.url().openapi({ description: "WebP fitting 400×400; equals `url` when the image already fits" }),
    html: z.string().openapi({ example: '<img src="https://img.example.com/i/2026/11/22/x1Hq9ZL0cV2mN4bR7tWs.png" alt="screenshot.png">' }),
    bbcode: z.string().openapi({ example: "[img]https://img.example.com/i/2026/11/22/x1Hq9ZL0cV2mN4bR7tWs.png[/img]" }),
    markdown: z.string().openapi({ example: "![screenshot.png](https://img.example.com/i/2026/11/22/x1Hq9ZL0cV2mN4bR7tWs.png)" }),
    markdown_with_link: z.string(),
    delete_url: z.url().openapi({ example: "https://img.example.com/api/v1/images/Qm7cX2kP9aLr4TzB" }),
    links: ImageLinks,
  })
  .openapi("Image");

export const ImagePage = z
  .object({
    current_page: z.number().int().openapi({ example: 1 }),
    last_page: z.number().int().openapi({ example: 1 }),
    per_page: z.number().int().openapi({ example: 30 }),
    total: z.number().int().openapi({ description: "Number of images of the account", example: 1 }),
    data: z.array(Image),
  })
  .openapi("ImagePage");

/** A success without a payload. */
export const EmptyResponse = envelope(z.null(), "EmptyResponse");

/** The body of POST /api/v1/images/tokens (JSON or a form); the user center's token form reads it too. */
export const TemporaryTokenRequest = z
  .object({
    num: intField(1, 100).openapi({ type: "integer", minimum: 1, maximum: 100, description: "Number of tokens to create", example: 5 }),
    seconds: intField(1, 2626560).openapi({
      type: "integer",
      minimum: 1,
      maximum: 2626560,
      description: "Validity in seconds (about 30.4 days at most)",
      example: 3600,
    }),
  })
  .openapi("TemporaryTokenRequest");
