class CreateGiftCards < ActiveRecord::Migration[7.1]
  def change
    create_table :gift_cards do |t|
      t.string :code, null: false, index: { unique: true }
      t.integer :balance_cents, null: false, default: 0
      t.integer :initial_cents, null: false
      t.string :currency, null: false, default: "USD"
      t.bigint :purchaser_id
      t.date :expires_on
      t.datetime :disabled_at
      t.timestamps
    end

    create_table :gift_card_redemptions do |t|
      t.references :gift_card, null: false, foreign_key: true
      t.references :order, null: false, foreign_key: true
      t.integer :amount_cents, null: false
      t.timestamps
    end
  end
end
