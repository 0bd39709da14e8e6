import type en from "../en/admin-settings.ts";
import type { Catalog } from "../types.ts";

export default {
  "admin.settings.title": "设置",
  "admin.settings.saved": "设置已保存。",
  "admin.settings.apiOff": "API 和用户中心已关闭：只有管理员能在这些页面上使用本站。",
  "admin.settings.switches": "站点开关",
  "admin.settings.api_enabled": "API 和用户中心",
  "admin.settings.api_enabled.hint": "关闭后：每个 /api/v1 调用和用户中心的每个页面都返回 403，只有管理员仍可使用这些管理页面。",
  "admin.settings.guest_upload_enabled": "游客上传",
  "admin.settings.guest_upload_enabled.hint": "不带令牌的上传（以及存储策略列表），按游客组的限制。",
  "admin.settings.registration_enabled": "注册",
  "admin.settings.registration_enabled.hint": "访客可以在注册页创建自己的账户；新账户加入默认用户组。",
  "admin.settings.identity": "站点标识",
  "admin.settings.siteName": "站点名称",
  "admin.settings.siteName.hint": "显示在页头、页面标题、登录页和 API 参考中；留空：{name}。",
  "admin.settings.accent": "强调色",
  "admin.settings.accent.hint": "#rrggbb，会在浅色和深色模式下调整以保证对比度；留空：默认蓝色。",
  "admin.settings.locale": "页面的默认语言",
  "admin.settings.locale.hint": "用于账户和浏览器都没有选择本站语言的访客。",
  "admin.settings.logo": "Logo",
  "admin.settings.logo.hint": "PNG、JPEG、GIF、WebP 或 ICO 图片，最大 24 KB，保存在设置中（选择文件，或粘贴 data: URL）；留空：默认标志。",
  "admin.settings.favicon": "网站图标",
  "admin.settings.favicon.hint": "同上，最大 8 KB；留空：默认图标。",
  "admin.settings.chooseFile": "{label}：选择文件",
  "admin.settings.save": "保存设置",
} satisfies Catalog<typeof en>;
