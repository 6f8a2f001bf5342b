# This file is auto-generated from the current state of the database. Instead
# of editing this file, please use the migrations feature of Active Record to
# incrementally modify your database, and then regenerate this schema definition.

ActiveRecord::Schema[7.1].define(version: 2026_11_18_142210) do
  enable_extension "plpgsql"

  create_table "categories", force: :cascade do |t|
    t.string "name", null: false
    t.string "slug", null: false
    t.bigint "parent_id"
    t.integer "position", default: 0, null: false
    t.datetime "created_at", null: false
    t.datetime "updated_at", null: false
    t.index ["parent_id"], name: "index_categories_on_parent_id"
    t.index ["slug"], name: "index_categories_on_slug", unique: true
  end

  create_table "coupons", force: :cascade do |t|
    t.string "code", null: false
    t.string "kind", null: false
    t.integer "value", default: 0, null: false
    t.datetime "starts_at", null: false
    t.datetime "expires_at"
    t.integer "usage_limit"
    t.datetime "created_at", null: false
    t.datetime "updated_at", null: false
    t.index ["code"], name: "index_coupons_on_code", unique: true
  end

  create_table "gift_card_redemptions", force: :cascade do |t|
    t.bigint "gift_card_id", null: false
    t.bigint "order_id", null: false
    t.integer "amount_cents", null: false
    t.datetime "created_at", null: false
    t.datetime "updated_at", null: false
    t.index ["gift_card_id"], name: "index_gift_card_redemptions_on_gift_card_id"
    t.index ["order_id"], name: "index_gift_card_redemptions_on_order_id"
  end

  create_table "gift_cards", force: :cascade do |t|
    t.string "code", null: false
    t.integer "balance_cents", default: 0, null: false
    t.integer "initial_cents", null: false
    t.string "currency", default: "USD", null: false
    t.bigint "purchaser_id"
    t.date "expires_on"
    t.datetime "disabled_at"
    t.datetime "created_at", null: false
    t.datetime "updated_at", null: false
    t.index ["code"], name: "index_gift_cards_on_code", unique: true
  end

  create_table "line_items", force: :cascade do |t|
    t.bigint "order_id", null: false
    t.bigint "product_id", null: false
    t.integer "quantity", default: 1, null: false
    t.integer "unit_price_cents", null: false
    t.datetime "created_at", null: false
    t.datetime "updated_at", null: false
    t.index ["order_id"], name: "index_line_items_on_order_id"
    t.index ["product_id"], name: "index_line_items_on_product_id"
  end

  create_table "orders", force: :cascade do |t|
    t.bigint "user_id"
    t.string "guest_email"
    t.bigint "coupon_id"
    t.bigint "partner_id"
    t.string "external_reference"
    t.string "state", default: "cart", null: false
    t.string "currency", default: "USD", null: false
    t.string "shipping_region"
    t.integer "subtotal_cents", default: 0, null: false
    t.integer "discount_cents", default: 0, null: false
    t.integer "shipping_cents", default: 0, null: false
    t.integer "tax_cents", default: 0, null: false
    t.integer "total_cents", default: 0, null: false
    t.string "charge_id"
    t.datetime "paid_at"
    t.datetime "refunded_at"
    t.string "invoice_number"
    t.datetime "invoiced_at"
    t.datetime "created_at", null: false
    t.datetime "updated_at", null: false
    t.index ["charge_id"], name: "index_orders_on_charge_id", unique: true
    t.index ["partner_id", "external_reference"], name: "index_orders_on_partner_id_and_external_reference", unique: true
    t.index ["user_id", "created_at"], name: "index_orders_on_user_id_and_created_at"
  end

  create_table "partners", force: :cascade do |t|
    t.string "name", null: false
    t.string "api_token_digest", null: false
    t.boolean "active", default: true, null: false
    t.datetime "created_at", null: false
    t.datetime "updated_at", null: false
    t.index ["api_token_digest"], name: "index_partners_on_api_token_digest", unique: true
  end

  create_table "products", force: :cascade do |t|
    t.bigint "category_id", null: false
    t.string "sku", null: false
    t.string "name", null: false
    t.string "slug", null: false
    t.text "description"
    t.integer "price_cents", null: false
    t.string "currency", default: "USD", null: false
    t.integer "stock", default: 0, null: false
    t.boolean "published", default: false, null: false
    t.boolean "digital", default: false, null: false
    t.datetime "discarded_at"
    t.integer "lock_version", default: 0, null: false
    t.datetime "created_at", null: false
    t.datetime "updated_at", null: false
    t.index ["category_id"], name: "index_products_on_category_id"
    t.index ["sku"], name: "index_products_on_sku", unique: true
    t.index ["slug"], name: "index_products_on_slug", unique: true
  end

  create_table "users", force: :cascade do |t|
    t.string "email", null: false
    t.string "name", null: false
    t.string "password_digest", null: false
    t.boolean "marketing_opt_in", default: false, null: false
    t.boolean "staff", default: false, null: false
    t.datetime "created_at", null: false
    t.datetime "updated_at", null: false
    t.index ["email"], name: "index_users_on_email", unique: true
  end

  add_foreign_key "gift_card_redemptions", "gift_cards"
  add_foreign_key "gift_card_redemptions", "orders"
  add_foreign_key "line_items", "orders"
  add_foreign_key "line_items", "products"
  add_foreign_key "orders", "coupons", on_delete: :nullify
  add_foreign_key "orders", "partners"
  add_foreign_key "orders", "users"
  add_foreign_key "products", "categories"
end
