# Applies a gift card to an order at checkout.
#
# The card covers as much of the order total as its balance allows; the rest is
# charged to the customer's card by PaymentGateway#charge. Call it inside the
# checkout transaction so a failed card charge rolls the debit back.
class GiftCardRedeemer
  Result = Struct.new(:applied_cents, :remaining_cents, :gift_card, keyword_init: true)

  class Error < StandardError; end
  class CardNotFound < Error; end
  class CurrencyMismatch < Error; end

  def initialize(order, code)
    @order = order
    @code = code
  end

  # What the card would cover, without touching its balance (checkout summary).
  def preview
    card = find_card
    Result.new(applied_cents: applicable_cents(card), remaining_cents: @order.total_cents - applicable_cents(card),
               gift_card: card)
  end

  def redeem!
    card = find_card
    applied = applicable_cents(card)
    card.debit!(applied, order: @order) if applied.positive?
    Result.new(applied_cents: applied, remaining_cents: @order.total_cents - applied, gift_card: card)
  end

  # Credits every redemption of the order back to its card (cancellations, refunds).
  def self.reverse!(order)
    order.gift_card_redemptions.includes(:gift_card).find_each do |redemption|
      card = redemption.gift_card
      card.with_lock { card.update!(balance_cents: card.balance_cents + redemption.amount_cents) }
      redemption.destroy!
    end
  end

  private

  def find_card
    card = GiftCard.lookup(@code)
    raise CardNotFound, "gift card ending #{GiftCard.normalize(@code).last(4)} is not valid" if card.nil?
    raise CurrencyMismatch, "gift card is in #{card.currency}, order is in #{@order.currency}" if card.currency != @order.currency

    card
  end

  def applicable_cents(card)
    [card.balance_cents, @order.total_cents].min
  end
end
