# One use of a gift card on an order. Refunding an order credits these back to
# the card (see GiftCardRedeemer#reverse!).
class GiftCardRedemption < ApplicationRecord
  belongs_to :gift_card
  belongs_to :order

  validates :amount_cents, numericality: { only_integer: true, greater_than: 0 }

  scope :for_currency, ->(currency) { joins(:gift_card).where(gift_cards: { currency: currency }) }
end
