# Computes an order's totals from its line items and coupon.
#
# All amounts are integer cents. The order-level coupon discount is also spread
# over the line items in proportion to their totals, so the invoice can show a
# per-line discount and a refund of one item returns the right share.
class PriceCalculator
  Totals = Struct.new(
    :subtotal_cents, :discount_cents, :shipping_cents, :tax_cents, :total_cents, :item_discounts,
    keyword_init: true
  )

  FREE_SHIPPING_THRESHOLD_CENTS = 5_000
  FLAT_SHIPPING_CENTS = 595

  # Sales tax by shipping region; VAT regions include tax in the price.
  TAX_RATES = { "US-CA" => 0.0725, "US-NY" => 0.04, "US-TX" => 0.0625, "US-WA" => 0.065 }.freeze
  DEFAULT_TAX_RATE = 0.0

  def initialize(order)
    @order = order
    @coupon = order.coupon
    @items = order.line_items.to_a
  end

  def call
    subtotal = @items.sum(&:total_cents)
    discount = coupon_discount(subtotal)
    taxable = subtotal - discount
    shipping = shipping_cents(taxable)
    tax = tax_cents(taxable)

    Totals.new(
      subtotal_cents: subtotal,
      discount_cents: discount,
      shipping_cents: shipping,
      tax_cents: tax,
      total_cents: taxable + shipping + tax,
      item_discounts: spread_discount(discount, subtotal)
    )
  end

  private

  def coupon_discount(subtotal)
    return 0 if @coupon.nil? || @coupon.exhausted?

    @coupon.discount_for(subtotal)
  end

  # {line_item_id => cents}. Rounding leftovers go to the largest item so the
  # parts always add up to the order discount.
  def spread_discount(discount, subtotal)
    return {} if @items.empty?

    shares = @items.to_h { |item| [item.id, discount * item.total_cents / subtotal] }
    largest = @items.max_by(&:total_cents)
    shares[largest.id] += discount - shares.values.sum
    shares
  end

  def shipping_cents(amount)
    return 0 if @coupon&.free_shipping?
    return 0 if amount >= FREE_SHIPPING_THRESHOLD_CENTS
    return 0 if @items.all?(&:digital?)

    FLAT_SHIPPING_CENTS
  end

  def tax_cents(amount)
    (amount * TAX_RATES.fetch(@order.shipping_region, DEFAULT_TAX_RATE)).round
  end
end
