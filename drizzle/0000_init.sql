CREATE TABLE "albums" (
	"id" serial PRIMARY KEY NOT NULL,
	"user_id" integer NOT NULL,
	"name" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "group_strategies" (
	"group_id" integer NOT NULL,
	"strategy_id" integer NOT NULL,
	"position" integer NOT NULL,
	CONSTRAINT "group_strategies_group_id_strategy_id_pk" PRIMARY KEY("group_id","strategy_id")
);
--> statement-breakpoint
CREATE TABLE "groups" (
	"id" serial PRIMARY KEY NOT NULL,
	"name" text NOT NULL,
	"is_default" boolean DEFAULT false NOT NULL,
	"is_guest" boolean DEFAULT false NOT NULL,
	"enabled" boolean DEFAULT true NOT NULL,
	"allow_api" boolean DEFAULT true NOT NULL,
	"max_file_size_kb" integer DEFAULT 10240 NOT NULL,
	"allowed_extensions" jsonb DEFAULT '["jpg","jpeg","png","gif","webp","avif"]'::jsonb NOT NULL,
	"max_pixels" bigint DEFAULT 100000000 NOT NULL,
	"uploads_per_minute" integer,
	"uploads_per_hour" integer,
	"uploads_per_day" integer,
	"uploads_per_week" integer,
	"uploads_per_month" integer,
	"concurrent_uploads" integer,
	"retention_max_seconds" integer,
	"default_capacity_kb" bigint DEFAULT 1048576 NOT NULL,
	"review_provider" text DEFAULT 'none' NOT NULL,
	"review_webhook_url" text,
	"review_timeout_ms" integer DEFAULT 5000 NOT NULL,
	"review_fail_open" boolean DEFAULT false NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "images" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"key" text NOT NULL,
	"user_id" integer,
	"album_id" integer,
	"strategy_id" integer NOT NULL,
	"path" text NOT NULL,
	"thumbnail_path" text,
	"name" text NOT NULL,
	"origin_name" text NOT NULL,
	"size" bigint NOT NULL,
	"mimetype" text NOT NULL,
	"extension" text NOT NULL,
	"width" integer NOT NULL,
	"height" integer NOT NULL,
	"md5" text NOT NULL,
	"sha1" text NOT NULL,
	"is_public" boolean DEFAULT true NOT NULL,
	"expired_at" timestamp with time zone,
	"uploader_ip" text DEFAULT '' NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "settings" (
	"id" integer PRIMARY KEY DEFAULT 1 NOT NULL,
	"api_enabled" boolean DEFAULT true NOT NULL,
	"guest_upload_enabled" boolean DEFAULT false NOT NULL
);
--> statement-breakpoint
CREATE TABLE "strategies" (
	"id" serial PRIMARY KEY NOT NULL,
	"name" text NOT NULL,
	"driver" text NOT NULL,
	"config" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"quota_kb" bigint,
	"used_bytes" bigint DEFAULT 0 NOT NULL,
	"enabled" boolean DEFAULT true NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "tokens" (
	"id" serial PRIMARY KEY NOT NULL,
	"user_id" integer NOT NULL,
	"kind" text NOT NULL,
	"secret_hash" text NOT NULL,
	"expired_at" timestamp with time zone,
	"revoked_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "upload_leases" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"subject" text NOT NULL,
	"expires_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "upload_log" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"subject" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "users" (
	"id" serial PRIMARY KEY NOT NULL,
	"username" text NOT NULL,
	"name" text NOT NULL,
	"email" text NOT NULL,
	"avatar" text,
	"group_id" integer NOT NULL,
	"enabled" boolean DEFAULT true NOT NULL,
	"capacity_kb" bigint,
	"used_bytes" bigint DEFAULT 0 NOT NULL,
	"image_num" integer DEFAULT 0 NOT NULL,
	"album_num" integer DEFAULT 0 NOT NULL,
	"registered_ip" text DEFAULT '' NOT NULL,
	"password_hash" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "albums" ADD CONSTRAINT "albums_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "group_strategies" ADD CONSTRAINT "group_strategies_group_id_groups_id_fk" FOREIGN KEY ("group_id") REFERENCES "public"."groups"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "group_strategies" ADD CONSTRAINT "group_strategies_strategy_id_strategies_id_fk" FOREIGN KEY ("strategy_id") REFERENCES "public"."strategies"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "images" ADD CONSTRAINT "images_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "images" ADD CONSTRAINT "images_album_id_albums_id_fk" FOREIGN KEY ("album_id") REFERENCES "public"."albums"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "images" ADD CONSTRAINT "images_strategy_id_strategies_id_fk" FOREIGN KEY ("strategy_id") REFERENCES "public"."strategies"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "tokens" ADD CONSTRAINT "tokens_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "users" ADD CONSTRAINT "users_group_id_groups_id_fk" FOREIGN KEY ("group_id") REFERENCES "public"."groups"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "albums_user_idx" ON "albums" USING btree ("user_id");--> statement-breakpoint
CREATE UNIQUE INDEX "images_key_key" ON "images" USING btree ("key");--> statement-breakpoint
CREATE UNIQUE INDEX "images_name_key" ON "images" USING btree ("name");--> statement-breakpoint
CREATE UNIQUE INDEX "images_path_key" ON "images" USING btree ("path");--> statement-breakpoint
CREATE INDEX "images_thumbnail_path_idx" ON "images" USING btree ("thumbnail_path");--> statement-breakpoint
CREATE INDEX "images_owner_created_idx" ON "images" USING btree ("user_id","created_at","id");--> statement-breakpoint
CREATE INDEX "images_expired_at_idx" ON "images" USING btree ("expired_at") WHERE "images"."expired_at" is not null;--> statement-breakpoint
CREATE UNIQUE INDEX "tokens_secret_hash_key" ON "tokens" USING btree ("secret_hash");--> statement-breakpoint
CREATE INDEX "tokens_user_idx" ON "tokens" USING btree ("user_id");--> statement-breakpoint
CREATE INDEX "upload_leases_subject_idx" ON "upload_leases" USING btree ("subject","expires_at");--> statement-breakpoint
CREATE INDEX "upload_log_subject_created_idx" ON "upload_log" USING btree ("subject","created_at");--> statement-breakpoint
CREATE UNIQUE INDEX "users_username_key" ON "users" USING btree ("username");--> statement-breakpoint
CREATE UNIQUE INDEX "users_email_key" ON "users" USING btree ("email");