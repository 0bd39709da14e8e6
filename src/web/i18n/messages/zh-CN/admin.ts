import type en from "../en/admin.ts";
import type { Catalog } from "../types.ts";

export default {
  "admin.nav.label": "管理",
  "admin.nav.overview": "总览",
  "admin.nav.users": "用户",
  "admin.nav.groups": "用户组",
  "admin.nav.strategies": "存储策略",
  "admin.nav.settings": "设置",
  "admin.nav.images": "图片",
  "admin.nav.maintenance": "维护",
  "admin.nav.webhooks": "Webhook",
  "admin.nav.audit": "审计日志",
  "admin.enabled": "已启用",
  "admin.disabled": "已停用",
  "admin.badge.disabled": "已停用",
  "admin.badge.admin": "管理员",
  "admin.none": "无",
  "admin.unlimited": "不限",
  "admin.notSaved": "未保存：请查看下方标出的字段。",
  "admin.invalid": "无效。",
  "admin.apiRefused": "管理 API 拒绝了请求。",
  "admin.noSuch": "没有这个{what, select, group {用户组} strategy {存储策略} user {用户} other {记录}}。",
  "admin.error.size": "请填写大小：以 KB、MB 或 GB 为单位的数字（{range}）。",
  "admin.error.duration": "请选择一个时长，或填写整数的分钟、小时或天数。",
  "admin.error.megapixels": "请填写百万像素数（{range}）。",
  "admin.error.whole": "请填写整数（{range}）。",
} satisfies Catalog<typeof en>;
