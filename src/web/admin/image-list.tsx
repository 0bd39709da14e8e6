/**
 * The admin Images page's parts: the filters (fieldsets in a grid: owner; storage and visibility; upload days; size
 * with a unit), the shared image card with the owner, strategy and key, the bulk delete, and the pages that ask before
 * a delete without script or say what was not deleted.
 */
import type { Strategy } from "../../db/repositories/strategies.ts";
import { parseDateTime } from "../../http/time.ts";
import {
  BulkForm,
  ConfirmButton,
  ConfirmPage,
  ImageCard,
  Notice,
  PerPageField,
  SELECT_PREFIX,
  Select,
  SizeInput,
  sizeKbOf,
  TextInput,
} from "../components/index.ts";
import { rich, t } from "../i18n/index.ts";
import type { SignedIn } from "../session.ts";
import { type AdminImage, type Described, type Filters, LIST, type ListState, PER_PAGE_CHOICES, SELECT_MAX } from "./image-query.ts";
import { ADMIN, AdminLayout } from "./layout.tsx";

export function FilterForm({ state, strategies, errors, clear }: { state: ListState; strategies: Strategy[]; errors: Record<string, string>; clear: boolean }) {
  const f = state.filters;
  const text = (name: keyof Filters, type: "text" | "date", label: string, hint?: string) => (
    <TextInput name={name} type={type} label={label} hint={hint} value={f[name]} error={errors[name]} attrs={type === "text" ? { maxlength: 64 } : {}} />
  );
  const size = (name: "min_kb" | "max_kb", label: string) => <SizeInput name={name} label={label} kb={sizeKbOf(f, name)} error={errors[name]} />;
  return (
    <form method="get" action={LIST} class="card admin-filters" role="search" aria-label={t("admin.images.find")}>
      <fieldset>
        <legend>{t("admin.images.owner")}</legend>
        {text("user", "text", t("admin.images.user"), t("admin.images.user.hint"))}
        <Select
          name="owner"
          label={t("admin.images.uploadedBy")}
          value={f.owner === "guests" ? "guests" : ""}
          error={errors.owner}
          options={[
            ["", t("admin.images.uploadedBy.anyone")],
            ["guests", t("admin.images.uploadedBy.guests")],
          ]}
        />
      </fieldset>
      <fieldset>
        <legend>{t("admin.images.where")}</legend>
        <Select
          name="strategy"
          label={t("admin.images.strategy")}
          value={f.strategy}
          error={errors.strategy}
          options={[
            ["", t("admin.images.strategy.all")],
            ...strategies.map((s) => [String(s.id), t("admin.images.strategy.option", { name: s.name, id: s.id })] as const),
          ]}
        />
        <Select
          name="visibility"
          label={t("admin.images.visibility")}
          value={f.visibility}
          error={errors.visibility}
          options={[
            ["", t("admin.images.visibility.all")],
            ["public", t("admin.images.visibility.public")],
            ["private", t("admin.images.visibility.private")],
          ]}
        />
      </fieldset>
      <fieldset>
        <legend>{t("admin.images.uploaded")}</legend>
        {text("from", "date", t("admin.images.from"))}
        {text("to", "date", t("admin.images.to"))}
      </fieldset>
      <fieldset>
        <legend>{t("admin.images.size")}</legend>
        {size("min_kb", t("admin.images.minSize"))}
        {size("max_kb", t("admin.images.maxSize"))}
      </fieldset>
      <div class="filter-end">
        <PerPageField choices={PER_PAGE_CHOICES} perPage={state.perPage} />
        <div class="buttons">
          <button type="submit" class="primary">
            {t("admin.images.show")}
          </button>
          {clear && (
            <a class="button" href={`${LIST}?page=1`}>
              {t("admin.images.clear")}
            </a>
          )}
        </div>
      </div>
    </form>
  );
}

const ownerName = (image: { userId: number | null; username: string | null }) =>
  image.userId === null ? t("admin.images.guest") : (image.username ?? t("admin.images.userN", { id: image.userId }));

const dateOf = (text: string | null) => (text ? parseDateTime(text) : null);

/** One image of the site: the shared card, with its owner, strategy and key, and its Delete. */
export function AdminImageCard({ image, signedIn, back }: { image: AdminImage; signedIn: SignedIn; back: string }) {
  const owner = ownerName({ userId: image.user_id, username: image.username });
  const name = image.origin_name;
  return (
    <ImageCard
      image={{
        key: image.key,
        name,
        url: image.url,
        thumbnailUrl: image.thumbnail_url,
        width: image.width,
        height: image.height,
        size: image.size * 1024,
        createdAt: dateOf(image.created_at) ?? new Date(0),
        expiredAt: dateOf(image.expired_at),
        isPublic: image.is_public,
      }}
      meta={
        <p class="muted small">
          {image.user_id === null
            ? t("admin.images.byGuest")
            : rich("admin.images.byUser", { name: owner, a: (chunks) => <a href={`${ADMIN}/users/${image.user_id}`}>{chunks}</a> })}{" "}
          · {image.strategy_name} · <code>{image.key}</code>
        </p>
      }
      actions={
        <ConfirmButton
          action={`${LIST}/${encodeURIComponent(image.key)}/delete`}
          question={t("admin.images.delete.question", { name, owner })}
          signedIn={signedIn}
          label={t("common.delete")}
          ariaLabel={t("admin.images.delete.named", { name })}
          hidden={{ back }}
        />
      }
    />
  );
}

/** Delete on the selection: its button waits for a selection (app.js); without script the server's answer leads back. */
export const BulkDelete = ({ signedIn, back }: { signedIn: SignedIn; back: string }) => (
  <BulkForm signedIn={signedIn} action={`${LIST}/delete`} back={back} max={SELECT_MAX}>
    <button type="submit" class="danger">
      {t("admin.images.deleteSelected")}
    </button>
  </BulkForm>
);

/** Fixed notices: the query only says how many, never what to print. */
export function ListNotices({ query }: { query: (name: string) => string | undefined }) {
  const count = (name: string) => {
    const v = query(name);
    return v !== undefined && /^\d{1,3}$/.test(v) ? Number(v) : 0;
  };
  const shown: string[] = [];
  if (count("deleted")) shown.push(t("admin.images.notice.deleted", { count: count("deleted") }));
  if (count("missing")) shown.push(t("admin.images.notice.missing", { count: count("missing") }));
  return (
    <>
      {shown.map((text) => (
        <Notice kind="success">{text}</Notice>
      ))}
    </>
  );
}

export function ConfirmDelete({
  signedIn,
  doomed,
  action,
  back,
  single,
}: {
  signedIn: SignedIn;
  doomed: Described[];
  action: string;
  back: string;
  single: boolean;
}) {
  return (
    <ConfirmPage
      title={t(doomed.length === 1 ? "admin.images.confirm.titleOne" : "admin.images.confirm.titleMany")}
      signedIn={signedIn}
      action={action}
      confirmLabel={t("images.delete.count", { count: doomed.length })}
      cancel={back}
      hidden={{ back }}
      wide
      frame={({ title, children }) => (
        <AdminLayout title={title} signedIn={signedIn} section="images">
          {children}
        </AdminLayout>
      )}
    >
      <p>{t("admin.images.confirm.text", { count: doomed.length })}</p>
      <ul class="doomed" aria-label={t("admin.images.confirm.list")}>
        {doomed.map((image) => (
          <li>
            <strong>{image.originName}</strong> <span class="muted">{t("admin.images.confirm.of", { owner: ownerName(image) })}</span> <code>{image.key}</code>
            {!single && <input type="hidden" name={`${SELECT_PREFIX}${image.key}`} value="1" />}
          </li>
        ))}
      </ul>
    </ConfirmPage>
  );
}

export function DeleteFailures({
  signedIn,
  deleted,
  failed,
  back,
}: {
  signedIn: SignedIn;
  deleted: number;
  failed: { key: string; message: string }[];
  back: string;
}) {
  return (
    <AdminLayout title={t("admin.images.failed.title")} signedIn={signedIn} section="images">
      <Notice kind="error">{t("admin.images.failed.text", { deleted, failed: failed.length })}</Notice>
      <ul class="card">
        {failed.map((f) => (
          <li>
            <code>{f.key}</code>: {f.message}
          </li>
        ))}
      </ul>
      <p>
        <a class="button" href={back}>
          ← {t("admin.images.failed.back")}
        </a>
      </p>
    </AdminLayout>
  );
}
