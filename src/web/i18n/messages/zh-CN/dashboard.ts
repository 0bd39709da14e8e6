import type en from "../en/dashboard.ts";
import type { Catalog } from "../types.ts";

export default {
  "dashboard.title": "概览",
  "dashboard.welcome": "账户已就绪。上传一张图片，或为你的上传工具创建一个 API 令牌。",
  "dashboard.profile": "个人资料",
  "dashboard.storage": "存储空间",
  "dashboard.used": "已用 {used}，共 {capacity}（{percent}%）",
  "dashboard.usedSpace": "已用空间",
  "dashboard.usedOf": "已用 {used}，共 {capacity}",
  "dashboard.images": "图片",
  "dashboard.albums": "相册",
  "dashboard.next": "开始使用",
  "dashboard.upload": "上传图片",
  "dashboard.yourImages": "我的图片",
  "dashboard.createToken": "创建 API 令牌",
  "dashboard.api": "上传工具和脚本通过 {api} 使用 API，需要令牌：参见 <docs>API 参考</docs>。",
} satisfies Catalog<typeof en>;
