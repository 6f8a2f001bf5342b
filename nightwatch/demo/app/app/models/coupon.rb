# Discount codes. `value` is a percentage for percent coupons and whole currency
# units for fixed coupons; free_shipping coupons have no value.
#
# Expired coupons are deleted by CouponCleanupJob every night (orders keep their
# totals; orders.coupon_id is nullified by the foreign key).
class Coupon < ApplicationRecord
  KINDS = %w[percent fixed free_shipping].freeze

  has_many :orders, dependent: :nullify

  validates :code, presence: true, uniqueness: { case_sensitive: false }
  validates :kind, inclusion: { in: KINDS }
  validates :value, numericality: { only_integer: true, greater_than: 0 }, unless: :free_shipping?
  validates :value, numericality: { less_than_or_equal_to: 100 }, if: :percent?

  before_validation :normalize_code

  scope :active, -> { where("starts_at <= :now AND (expires_at IS NULL OR expires_at > :now)", now: Time.current) }
  scope :expired, -> { where(expires_at: ..Time.current) }

  def self.redeemable(code)
    active.find_by(code: code.to_s.strip.upcase)
  end

  KINDS.each do |name|
    define_method(:"#{name}?") { kind == name }
  end

  def active?
    starts_at <= Time.current && (expires_at.nil? || expires_at > Time.current)
  end

  def exhausted?
    usage_limit.present? && orders.placed.count >= usage_limit
  end

  def discount_for(subtotal_cents)
    case kind
    when "percent" then (subtotal_cents * value).fdiv(100).round
    when "fixed" then [value * 100, subtotal_cents].min
    else 0
    end
  end

  private

  def normalize_code
    self.code = code.to_s.strip.upcase
  end
end
