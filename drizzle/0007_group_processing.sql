-- Issue 17 §2: processing on upload per group (src/images/process.ts). Off while convert_format, max_width,
-- max_height and jpeg_max_quality are all null, which is what existing groups get.
ALTER TABLE "groups" ADD COLUMN "convert_format" text;--> statement-breakpoint
ALTER TABLE "groups" ADD COLUMN "convert_quality" integer DEFAULT 80 NOT NULL;--> statement-breakpoint
ALTER TABLE "groups" ADD COLUMN "max_width" integer;--> statement-breakpoint
ALTER TABLE "groups" ADD COLUMN "max_height" integer;--> statement-breakpoint
ALTER TABLE "groups" ADD COLUMN "jpeg_max_quality" integer;--> statement-breakpoint
ALTER TABLE "groups" ADD CONSTRAINT "groups_convert_format_check" CHECK ("groups"."convert_format" in ('webp', 'avif', 'jpeg'));--> statement-breakpoint
ALTER TABLE "groups" ADD CONSTRAINT "groups_convert_quality_check" CHECK ("groups"."convert_quality" between 1 and 100);--> statement-breakpoint
ALTER TABLE "groups" ADD CONSTRAINT "groups_max_width_check" CHECK ("groups"."max_width" >= 1);--> statement-breakpoint
ALTER TABLE "groups" ADD CONSTRAINT "groups_max_height_check" CHECK ("groups"."max_height" >= 1);--> statement-breakpoint
ALTER TABLE "groups" ADD CONSTRAINT "groups_jpeg_max_quality_check" CHECK ("groups"."jpeg_max_quality" between 1 and 100);
