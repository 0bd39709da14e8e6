/** The pages' components (docs/decisions/pages-design-system.md): every piece that appears on more than one page. */
export { BulkForm } from "./bulk.tsx";
export { Card, Cell, Table } from "./card.tsx";
export { ConfirmButton, ConfirmFooter, ConfirmPage } from "./confirm.tsx";
export { CopyButton, CopyField, SecretValue } from "./copy.tsx";
export {
  aria,
  bindFields,
  Checkbox,
  describedBy,
  Field,
  FieldError,
  FormToken,
  Hint,
  type Options,
  PasswordInput,
  PerPageField,
  PostForm,
  RadioGroup,
  Select,
  Switch,
  TextInput,
} from "./form.tsx";
export { type CardImage, ImageCard, ImageGrid, SELECT_PREFIX } from "./image-card.tsx";
export { allAssets, type Asset, asset, assetFile, scriptInLanguages } from "./assets.ts";
export { assets, Layout, type Section } from "./layout.tsx";
export { EmptyState, Notice } from "./notice.tsx";
export { Pager } from "./pager.tsx";
export { PreferenceFields } from "./preferences.tsx";
export { Bytes, formatBytes, UtcTime } from "./time.tsx";
export { DURATION_PRESETS, DurationInput, durationOf, durationText, MegapixelInput, pixelsOf, SizeInput, sizeKbOf } from "./units.tsx";
