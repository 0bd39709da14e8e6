/**
 * How this server encodes AVIF, wherever it does (variants, conversion on upload): one effort for all, chosen by
 * measurement (docs/decisions/avif-effort.md; `bun run bench --only images` measures it again, cell 6).
 * libaom's cost grows steeply with effort while the bytes and the quality barely move on photos.
 */
export const AVIF_EFFORT = 0;

/** sharp's `.avif()` options at `quality` (1-100). */
export const avifOptions = (quality: number, effort: number = AVIF_EFFORT) => ({ quality, effort });
