class LineItem < ApplicationRecord
  MAX_QUANTITY = 99

  belongs_to :order, touch: true
  belongs_to :product

  validates :quantity, numericality: { only_integer: true, greater_than: 0, less_than_or_equal_to: MAX_QUANTITY }
  validates :unit_price_cents, numericality: { only_integer: true, greater_than_or_equal_to: 0 }

  before_validation :capture_price, on: :create

  delegate :name, :sku, :digital?, to: :product

  def total_cents
    unit_price_cents * quantity
  end

  def free?
    unit_price_cents.zero?
  end

  private

  # Prices are frozen when the item is added, so a catalogue change does not move
  # the total of an open cart under the customer.
  def capture_price
    self.unit_price_cents ||= product&.price_cents
  end
end
