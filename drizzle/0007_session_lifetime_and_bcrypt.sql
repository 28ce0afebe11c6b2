ALTER TABLE "sessions" ADD COLUMN "created_at" integer DEFAULT extract(epoch from now())::integer NOT NULL;--> statement-breakpoint
-- Sessions from before this column count from their last activity (their start is not known).
UPDATE "sessions" SET "created_at" = "last_activity";--> statement-breakpoint
CREATE INDEX "sessions_created_at_index" ON "sessions" USING btree ("created_at");--> statement-breakpoint
CREATE INDEX "users_bcrypt_cost_index" ON "users" USING btree (substr("users"."password", 5, 2)) WHERE "users"."password" like '$2_$%';