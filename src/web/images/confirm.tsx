/** The Images page's confirmations when there is no script: delete one image, delete the selected images. */
import { ConfirmPage } from "../components/index.ts";
import { SELECT_PREFIX } from "../components/index.ts";
import { rich, t } from "../i18n/index.ts";
import { BASE, type SignedIn } from "../session.ts";
import { detailHref } from "./query.ts";

const strong = (chunks: unknown) => <strong>{chunks}</strong>;

export function ConfirmDelete({
  signedIn,
  image,
  page,
  perPage,
  back,
}: {
  signedIn: SignedIn;
  image: { key: string; name: string };
  page: number;
  perPage: number;
  back: string;
}) {
  return (
    <ConfirmPage
      title={t("images.delete.titleOne")}
      signedIn={signedIn}
      active="images"
      action={`${detailHref(image.key)}/delete`}
      confirmLabel={t("common.delete")}
      cancel={back}
      hidden={{ page: String(page), per_page: String(perPage), back }}
    >
      <p>{rich("images.delete.confirmOne", { name: image.name, b: strong })}</p>
    </ConfirmPage>
  );
}

export function ConfirmBulkDelete({ signedIn, images, back }: { signedIn: SignedIn; images: { key: string; originName: string }[]; back: string }) {
  return (
    <ConfirmPage
      title={t("images.delete.titleMany")}
      signedIn={signedIn}
      active="images"
      action={`${BASE}/images/delete`}
      confirmLabel={t("images.delete.count", { count: images.length })}
      cancel={back}
      hidden={{ back }}
      wide
    >
      <p>{t("images.delete.confirmMany", { count: images.length })}</p>
      <ul class="doomed" aria-label={t("images.delete.listLabel")}>
        {images.map((image) => (
          <li>
            <a href={detailHref(image.key)}>{image.originName}</a>
            <input type="hidden" name={`${SELECT_PREFIX}${image.key}`} value="1" />
          </li>
        ))}
      </ul>
    </ConfirmPage>
  );
}
