CREATE TABLE "sessions" (
	"id" serial PRIMARY KEY NOT NULL,
	"secret_hash" text NOT NULL,
	"user_id" integer NOT NULL,
	"ip" text DEFAULT '' NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"last_seen_at" timestamp with time zone DEFAULT now() NOT NULL,
	"expires_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
ALTER TABLE "settings" ADD COLUMN "registration_enabled" boolean DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE "tokens" ADD COLUMN "session_id" integer;--> statement-breakpoint
ALTER TABLE "tokens" ADD COLUMN "label" text;--> statement-breakpoint
ALTER TABLE "tokens" ADD COLUMN "last_used_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "sessions" ADD CONSTRAINT "sessions_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "sessions_secret_hash_key" ON "sessions" USING btree ("secret_hash");--> statement-breakpoint
CREATE INDEX "sessions_user_idx" ON "sessions" USING btree ("user_id");--> statement-breakpoint
CREATE INDEX "sessions_expires_at_idx" ON "sessions" USING btree ("expires_at");--> statement-breakpoint
ALTER TABLE "tokens" ADD CONSTRAINT "tokens_session_id_sessions_id_fk" FOREIGN KEY ("session_id") REFERENCES "public"."sessions"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "tokens_session_idx" ON "tokens" USING btree ("session_id") WHERE "tokens"."session_id" is not null;--> statement-breakpoint
CREATE INDEX "users_username_lower_idx" ON "users" USING btree (lower("username"));