/**
 * How this server encodes AVIF, wherever it does (variants, conversion on upload): one effort for all, chosen by
 * measurement (docs/decisions/avif-effort.md; `bun run scripts/bench/variants.ts --avif-settings` measures it again).
 * libaom's cost grows steeply with effort while the bytes and the quality barely move on photos.
 */
export const AVIF_EFFORT = 0;

/** sharp's `.avif()` options at `quality` (1-100). */
export const avifOptions = (quality: number, effort: number = AVIF_EFFORT) => ({ quality, effort });
