CREATE TABLE "laravel_imported_users" (
	"old_id" bigint PRIMARY KEY NOT NULL,
	"user_id" bigint NOT NULL,
	"remember_token_digest" varchar(64),
	"legacy_password_hash" text,
	"imported_at" timestamp (6) with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "laravel_imported_users" ADD CONSTRAINT "laravel_imported_users_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "laravel_imported_users_user_id_unique" ON "laravel_imported_users" USING btree ("user_id");