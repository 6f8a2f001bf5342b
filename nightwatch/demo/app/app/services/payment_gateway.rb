# Thin wrapper around Stripe so the rest of the app speaks orders and cents.
#
# The API key is configured once in config/initializers/stripe.rb from the
# encrypted credentials; nothing here reads or logs it.
class PaymentGateway
  Charge = Struct.new(:id, :amount_cents, :status, keyword_init: true)
  Refund = Struct.new(:id, :amount_cents, :status, keyword_init: true)

  class PaymentFailed < StandardError; end

  # Charges the part of the order not covered by gift cards. Idempotent per
  # order, so a double-clicked "Pay" button charges once.
  def charge(order, payment_method_id:)
    amount = order.card_charged_cents
    return Charge.new(id: nil, amount_cents: 0, status: "not_required") if amount.zero?

    intent = Stripe::PaymentIntent.create(
      {
        amount: amount,
        currency: order.currency.downcase,
        payment_method: payment_method_id,
        confirm: true,
        automatic_payment_methods: { enabled: true, allow_redirects: "never" },
        receipt_email: order.contact_email,
        metadata: { order_id: order.id, order_number: order.number }
      },
      { idempotency_key: "order-#{order.id}-charge" }
    )
    raise PaymentFailed, "payment #{intent.id} is #{intent.status}" unless intent.status == "succeeded"

    Charge.new(id: intent.latest_charge, amount_cents: amount, status: intent.status)
  rescue Stripe::CardError => e
    raise PaymentFailed, e.message
  end

  # Refunds `amount_cents` of a charge back to the customer's card.
  def refund(charge_id, amount_cents:, order:)
    refund = Stripe::Refund.create(
      { charge: charge_id, amount: amount_cents, metadata: { order_id: order.id } },
      { idempotency_key: "order-#{order.id}-refund-#{amount_cents}" }
    )
    Refund.new(id: refund.id, amount_cents: refund.amount, status: refund.status)
  end

  def retrieve_charge(charge_id)
    Stripe::Charge.retrieve(charge_id)
  end
end
