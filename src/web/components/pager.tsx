/** The pager of every list: previous, where we are, next. */
import { t } from "../i18n/index.ts";

interface PagerProps {
  page: number;
  /** The last page, or undefined when it is not known (a count stopped at a cap). */
  lastPage?: number;
  href: (page: number) => string;
  label?: string;
  /** Words of the links ("Newer"/"Older" for a log); default Previous and Next. */
  prev?: string;
  next?: string;
  /** Shown between the links instead of "Page 2 of 5". */
  summary?: string;
}

export function Pager({ page, lastPage, href, label, prev, next, summary }: PagerProps) {
  const hasNext = lastPage === undefined || page < lastPage;
  return (
    <nav class="pages" aria-label={label ?? t("common.pager.label")}>
      {page > 1 ? (
        <a href={href(lastPage === undefined ? page - 1 : Math.min(page - 1, lastPage))} rel="prev">
          ← {prev ?? t("common.pager.previous")}
        </a>
      ) : (
        <span></span>
      )}
      <span>{summary ?? (lastPage === undefined ? t("common.pager.page", { page }) : t("common.pager.pageOf", { page, last: lastPage }))}</span>
      {hasNext ? (
        <a href={href(page + 1)} rel="next">
          {next ?? t("common.pager.next")} →
        </a>
      ) : (
        <span></span>
      )}
    </nav>
  );
}
