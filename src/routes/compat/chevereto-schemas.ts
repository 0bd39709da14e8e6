/** The spec's description of the Chevereto/ImgBB upload dialect (docs/decisions/chevereto-imgbb-dialect.md). */
import { z } from "@hono/zod-openapi";

const variant = (description: string) =>
  z
    .object({
      filename: z.string().openapi({ example: "Xb3kQ9mT2pLw8RvY4nZc.png" }),
      name: z.string().openapi({ description: "`filename` without its extension", example: "Xb3kQ9mT2pLw8RvY4nZc" }),
      mime: z.string().openapi({ example: "image/png" }),
      extension: z.string().openapi({ example: "png" }),
      url: z.url().openapi({ example: "https://img.example.com/i/2026/11/22/Xb3kQ9mT2pLw8RvY4nZc.png" }),
    })
    .openapi({ description });

export const CheveretoImage = z
  .object({
    id: z.string().openapi({ description: "The image's key (ImgBB's `id`); DELETE /api/v1/images/{key} removes it", example: "aB3dE5fG7hJ9kL1m" }),
    id_encoded: z.string().openapi({ description: "The same key (Chevereto's `id_encoded`)", example: "aB3dE5fG7hJ9kL1m" }),
    name: z.string().openapi({ description: "Stored file name without its extension", example: "Xb3kQ9mT2pLw8RvY4nZc" }),
    extension: z.string().openapi({ example: "png" }),
    filename: z.string().openapi({ description: "Stored file name", example: "Xb3kQ9mT2pLw8RvY4nZc.png" }),
    original_filename: z.string().openapi({ description: "The name it was uploaded with (`origin_name` of the v1 API)", example: "screenshot.png" }),
    title: z.string().openapi({ description: "`original_filename` without its extension", example: "screenshot" }),
    description: z.null().openapi({ description: "Not kept: always null" }),
    mime: z.string().openapi({ example: "image/png" }),
    size: z.number().int().openapi({ description: "Bytes stored (after the group's metadata policy and processing)", example: 53237 }),
    width: z.number().int().openapi({ example: 1151 }),
    height: z.number().int().openapi({ example: 898 }),
    md5: z.string().openapi({ example: "c684350d722c956c362ab70299735830" }),
    nsfw: z.literal(0).openapi({ description: "Not kept: always 0" }),
    date: z.string().openapi({ description: "Upload time, `YYYY-MM-DD HH:MM:SS` in the server's time zone", example: "2026-11-22 10:30:00" }),
    date_gmt: z.string().openapi({ description: "Upload time, `YYYY-MM-DD HH:MM:SS` in UTC", example: "2026-11-22 02:30:00" }),
    time: z.number().int().openapi({ description: "Upload time, Unix seconds (ImgBB)", example: 1795314600 }),
    expiration: z.number().int().openapi({ description: "Seconds from upload to removal; 0 = kept (ImgBB)", example: 0 }),
    expiration_date_gmt: z.string().nullable().openapi({ description: "When the image is removed, UTC; null = kept (Chevereto 4)", example: null }),
    url: z.url().openapi({ description: "The image's address", example: "https://img.example.com/i/2026/11/22/Xb3kQ9mT2pLw8RvY4nZc.png" }),
    url_viewer: z
      .url()
      .openapi({ description: "There is no viewer page: the image's address", example: "https://img.example.com/i/2026/11/22/Xb3kQ9mT2pLw8RvY4nZc.png" }),
    display_url: z.url().openapi({
      description: "The image's address (no medium-size variant is made)",
      example: "https://img.example.com/i/2026/11/22/Xb3kQ9mT2pLw8RvY4nZc.png",
    }),
    delete_url: z.url().openapi({
      description: "DELETE it with the same token as `Authorization: Bearer` (the v1 API's delete); opening it in a browser does nothing",
      example: "https://img.example.com/api/v1/images/aB3dE5fG7hJ9kL1m",
    }),
    image: variant("The image itself"),
    thumb: variant("The thumbnail: the image itself when it fits the 400×400 box, else a WebP"),
    medium: variant("The image itself (no medium-size variant is made)"),
  })
  .openapi("CheveretoImage", {
    description: "An uploaded image in the fields Chevereto 3/4 and ImgBB clients read; the same object in both answers.",
  });

export const CheveretoUploadResponse = z
  .object({
    status_code: z.literal(200),
    success: z.object({ message: z.literal("image uploaded"), code: z.literal(200) }),
    image: CheveretoImage,
    status_txt: z.literal("OK"),
  })
  .openapi("CheveretoUploadResponse", { description: "Chevereto's answer: the source was sent as `source`." });

export const ImgbbUploadResponse = z
  .object({
    data: CheveretoImage,
    success: z.literal(true),
    status: z.literal(200),
  })
  .openapi("ImgbbUploadResponse", { description: "ImgBB's answer: the source was sent as `image`." });

export const CheveretoError = z
  .object({
    status_code: z.number().int().openapi({ description: "The HTTP status", example: 400 }),
    error: z.object({
      message: z.string().openapi({ example: "Empty upload source." }),
      code: z.number().int().openapi({
        description: "Chevereto's code where it has one (100 key, 120 invalid base64, 130 empty source), else the HTTP status",
        example: 130,
      }),
      context: z.string().openapi({ description: "This server's error code (`bad_request`, `unauthorized`, …)", example: "bad_request" }),
    }),
    status_txt: z.string().openapi({ description: "The status's reason phrase", example: "Bad Request" }),
    request_id: z.string().optional().openapi({ description: "Present on 500 answers; the server log carries the same id" }),
  })
  .openapi("CheveretoError", { description: "Chevereto's (and ImgBB's) error envelope." });

const sourceDescription =
  "The image: a file part, or its base64 (standard alphabet, padded; whitespace and a `data:…;base64,` prefix are allowed; at most the group's per-image limit once decoded). " +
  "An image URL is refused (400): this server does not fetch addresses for a caller.";

const fields = {
  key: z.string().optional().openapi({
    description:
      "A token of this server (permanent or temporary). Also accepted as the `X-API-Key` header, `Authorization: Bearer`, or `?key=` in the query. In the body it must come before `source`: the server reads at most 64 KB of a body before it knows who sends it.",
  }),
  format: z
    .enum(["json", "txt", "redirect"])
    .optional()
    .openapi({ description: "Also accepted in the query string. json (default), txt (the URL as text), redirect (302 to it)" }),
  name: z.string().optional().openapi({ description: "ImgBB: the file's name (an extension is added from the content when missing)" }),
  title: z.string().optional().openapi({ description: "Accepted, not kept" }),
  description: z.string().optional().openapi({ description: "Accepted, not kept" }),
  tags: z.string().optional().openapi({ description: "Accepted, not kept" }),
  nsfw: z.string().optional().openapi({ description: "Accepted, not kept" }),
  category_id: z.string().optional().openapi({ description: "Accepted, not kept" }),
  width: z.string().optional().openapi({ description: "Accepted, ignored (no resize on request)" }),
  album_id: z.string().optional().openapi({ description: "An album of the account, by its number on this server", example: "3" }),
  expiration: z.string().optional().openapi({
    description: "When to remove the image: seconds (ImgBB) or an ISO 8601 duration such as `PT5M`, `P3D` (Chevereto). Within the group's retention ceiling.",
    example: "P3D",
  }),
};

export const CheveretoUploadForm = z
  .object({
    source: z
      .string()
      .optional()
      .openapi({ type: "string", format: "binary", description: `Chevereto's name for the image. ${sourceDescription}` }),
    image: z
      .string()
      .optional()
      .openapi({ type: "string", format: "binary", description: `ImgBB's name for the image (the answer is then ImgBB's). ${sourceDescription}` }),
    ...fields,
  })
  .openapi("CheveretoUploadForm");

export const CheveretoUploadUrlencoded = z
  .object({
    source: z
      .string()
      .optional()
      .openapi({ description: `Chevereto's name for the image, in base64. ${sourceDescription}` }),
    image: z
      .string()
      .optional()
      .openapi({ description: `ImgBB's name for the image, in base64 (the answer is then ImgBB's). ${sourceDescription}` }),
    ...fields,
  })
  .openapi("CheveretoUploadUrlencoded");
