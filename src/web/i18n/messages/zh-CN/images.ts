import type en from "../en/images.ts";
import type { Catalog } from "../types.ts";

export default {
  "images.delete.count": "删除 {count, number} 张图片",
  "images.card.select": "选择",
  "images.card.opensNewTab": "{name}（在新标签页打开）",
  "images.card.private": "私有",
  "images.card.expires": "到期",
} satisfies Catalog<typeof en>;
