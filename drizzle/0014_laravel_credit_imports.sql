CREATE TABLE "laravel_imported_holds" (
	"hold_id" bigint PRIMARY KEY NOT NULL,
	"reference" varchar(191) NOT NULL,
	"original_created_at" timestamp (6) with time zone NOT NULL,
	"imported_at" timestamp (6) with time zone NOT NULL
);
--> statement-breakpoint
ALTER TABLE "laravel_imported_holds" ADD CONSTRAINT "laravel_imported_holds_hold_id_credit_holds_id_fk" FOREIGN KEY ("hold_id") REFERENCES "public"."credit_holds"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "credit_transactions_opening_balance_unique" ON "credit_transactions" USING btree ("user_id") WHERE "credit_transactions"."kind" = 'opening_balance';