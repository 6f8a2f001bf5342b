# Stripe webhooks (POST /webhooks/stripe).
#
# The signature is checked against the endpoint secret from credentials. Event
# types we do not handle are acknowledged with 200 so Stripe stops retrying;
# any exception answers 500 and Stripe retries with backoff for three days.
class WebhooksController < ActionController::API
  before_action :verify_signature

  def stripe
    object = @event.fetch("data").fetch("object")
    case @event.fetch("type")
    when "payment_intent.succeeded" then payment_succeeded(object)
    when "payment_intent.payment_failed" then payment_failed(object)
    when "charge.refunded" then charge_refunded(object)
    when "charge.dispute.created" then dispute_created(object)
    else Rails.logger.info("stripe webhook ignored: #{@event["type"]} #{@event["id"]}")
    end
    head :ok
  end

  private

  def verify_signature
    payload = request.body.read
    Stripe::Webhook::Signature.verify_header(
      payload, request.headers["Stripe-Signature"], Rails.configuration.x.stripe_webhook_secret
    )
    @event = JSON.parse(payload)
  rescue Stripe::SignatureVerificationError, JSON::ParserError => e
    Rails.logger.warn("stripe webhook rejected: #{e.class}")
    head :bad_request
  end

  # Normally the order is already paid by CheckoutController#create; this covers
  # 3-D Secure payments that complete after the customer left the page.
  def payment_succeeded(intent)
    order = Order.find_by(id: intent.dig("metadata", "order_id"))
    return if order.nil? || order.paid?

    order.mark_paid!(intent.fetch("latest_charge"))
  end

  def payment_failed(intent)
    order = Order.find_by(id: intent.dig("metadata", "order_id"))
    return if order.nil?

    Rails.logger.info("payment failed for order #{order.id}: #{intent.dig("last_payment_error", "code")}")
  end

  # Refunds made in the Stripe dashboard (support team) are mirrored on the order.
  def charge_refunded(charge)
    order_id = charge.fetch("metadata").fetch("order_id")
    order = Order.find_by(id: order_id)
    return if order.nil?

    fully_refunded = charge.fetch("amount_refunded") >= charge.fetch("amount")
    order.update!(state: "refunded", refunded_at: Time.current) if fully_refunded && order.refundable?
  end

  def dispute_created(dispute)
    order = Order.find_by(charge_id: dispute.fetch("charge"))
    Rails.logger.warn("dispute #{dispute.fetch("id")} opened for order #{order&.id || "unknown"}")
  end
end
