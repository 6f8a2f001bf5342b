# An order moves cart -> placed -> paid -> fulfilled, or ends cancelled / refunded.
#
# Guest checkout leaves user_id empty and stores guest_email instead, so code that
# needs an address should use #contact_email rather than going through the user.
class Order < ApplicationRecord
  STATES = %w[cart placed paid fulfilled cancelled refunded].freeze
  CURRENCIES = %w[USD EUR GBP].freeze

  belongs_to :user, optional: true
  belongs_to :partner, optional: true
  belongs_to :coupon, optional: true
  has_many :line_items, dependent: :destroy
  has_many :products, through: :line_items
  has_many :gift_card_redemptions, dependent: :destroy

  money_columns :subtotal_cents, :discount_cents, :shipping_cents, :tax_cents, :total_cents

  validates :state, inclusion: { in: STATES }
  validates :currency, inclusion: { in: CURRENCIES }
  validates :guest_email, presence: true, if: -> { user_id.nil? && partner_id.nil? && !cart? }

  scope :placed, -> { where.not(state: "cart") }
  scope :paid, -> { where(state: %w[paid fulfilled]) }
  scope :recent, -> { order(created_at: :desc) }
  scope :abandoned, -> { where(state: "cart").where(updated_at: ...7.days.ago) }

  STATES.each do |name|
    define_method(:"#{name}?") { state == name }
  end

  def contact_email
    user&.email || guest_email
  end

  # Customer-facing number printed on invoices and emails.
  def number
    "SF-#{id.to_s.rjust(7, "0")}"
  end

  def subtotal_from_items_cents
    line_items.sum(&:total_cents)
  end

  # Amount paid through the card processor. Gift cards cover part of the total,
  # so this can be lower than total_cents; refunds to the card must not exceed it.
  def card_charged_cents
    total_cents - gift_card_redemptions.sum(:amount_cents)
  end

  def recalculate!
    totals = PriceCalculator.new(self).call
    update!(
      subtotal_cents: totals.subtotal_cents,
      discount_cents: totals.discount_cents,
      shipping_cents: totals.shipping_cents,
      tax_cents: totals.tax_cents,
      total_cents: totals.total_cents
    )
    totals
  end

  def place!
    raise ArgumentError, "cannot place an empty order" if line_items.empty?

    transaction do
      line_items.each { |item| item.product.reserve!(item.quantity) }
      update!(state: "placed")
    end
  end

  def mark_paid!(charge_id)
    update!(state: "paid", charge_id: charge_id, paid_at: Time.current)
    InvoiceJob.perform_async(id)
  end

  def refundable?
    (paid? || fulfilled?) && refunded_at.nil?
  end

  def cancellable?
    placed? && created_at > 30.minutes.ago
  end
end
