-- The pages' identity, language and the record of what an upload's metadata policy removed
-- (docs/decisions/pages-design-system.md):
-- 1. settings: the site's name, logo, favicon and accent colour, and the pages' default language;
-- 2. users.locale: the language an account chose for the pages;
-- 3. images.metadata_removed: what the metadata policy removed at upload. Existing images stay null ("not
--    recorded"); only then does the column get its default, so new uploads record "nothing removed" unless the upload
--    says otherwise.
ALTER TABLE "settings" ADD COLUMN "site_name" text DEFAULT '' NOT NULL;--> statement-breakpoint
ALTER TABLE "settings" ADD COLUMN "site_logo" text;--> statement-breakpoint
ALTER TABLE "settings" ADD COLUMN "site_favicon" text;--> statement-breakpoint
ALTER TABLE "settings" ADD COLUMN "accent_color" text DEFAULT '' NOT NULL;--> statement-breakpoint
ALTER TABLE "settings" ADD COLUMN "default_locale" text DEFAULT 'en' NOT NULL;--> statement-breakpoint
ALTER TABLE "users" ADD COLUMN "locale" text;--> statement-breakpoint
ALTER TABLE "images" ADD COLUMN "metadata_removed" jsonb;--> statement-breakpoint
ALTER TABLE "images" ALTER COLUMN "metadata_removed" SET DEFAULT '{"removed":[]}'::jsonb;
