-- Issue 17 §3: the variants of an image made on demand (a width of the ladder and an output format), one row per
-- variant. The row goes with its image (ON DELETE CASCADE); the delete that removes the image queues the variants'
-- objects as pending removals in the same transaction (services/delete.ts), so no file outlives its row for long.
CREATE TABLE "image_variants" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"image_id" bigint NOT NULL,
	"width" integer NOT NULL,
	"format" text NOT NULL,
	"path" text NOT NULL,
	"size" bigint NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "image_variants_format_check" CHECK ("image_variants"."format" in ('webp', 'avif', 'jpeg', 'png', 'gif'))
);
--> statement-breakpoint
ALTER TABLE "image_variants" ADD CONSTRAINT "image_variants_image_id_images_id_fk" FOREIGN KEY ("image_id") REFERENCES "public"."images"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "image_variants_image_width_format_key" ON "image_variants" USING btree ("image_id","width","format");--> statement-breakpoint
CREATE UNIQUE INDEX "image_variants_path_key" ON "image_variants" USING btree ("path");
