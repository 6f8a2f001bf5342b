# Numbers the invoice of a paid order and emails it to the customer.
# Enqueued by Order#mark_paid!.
class InvoiceJob
  include Sidekiq::Job
  sidekiq_options queue: :mailers, retry: 5

  def perform(order_id)
    order = Order.includes(line_items: :product).find(order_id)
    # Sidekiq retries a job that failed after the email went out; never send twice.
    return if order.invoiced_at.present?

    totals = PriceCalculator.new(order, order.coupon).call
    lines = order.line_items.map { |item| invoice_line(item, order.currency) }

    order.update!(invoice_number: invoice_number_for(order), invoiced_at: Time.current)
    OrderMailer.with(order: order, lines: lines, totals: summary(totals, order.currency)).invoice.deliver_now
  end

  private

  def invoice_line(item, currency)
    {
      description: "#{item.quantity} × #{item.name}",
      sku: item.sku,
      unit_price: MoneyFormat.format(item.unit_price_cents, currency),
      amount: MoneyFormat.format(item.total_cents, currency)
    }
  end

  def summary(totals, currency)
    {
      subtotal: MoneyFormat.format(totals.subtotal_cents, currency),
      discount: MoneyFormat.format(-totals.discount_cents, currency),
      shipping: MoneyFormat.format(totals.shipping_cents, currency),
      tax: MoneyFormat.format(totals.tax_cents, currency),
      total: MoneyFormat.format(totals.total_cents, currency)
    }
  end

  # INV-2026-0001234: year of payment and the order id, so numbers never collide.
  def invoice_number_for(order)
    Kernel.format("INV-%<year>d-%<id>07d", year: order.paid_at.year, id: order.id)
  end
end
