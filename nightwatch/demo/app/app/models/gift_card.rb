# A prepaid card with a balance in one currency. Sold in the shop and by partners;
# redeemed at checkout through GiftCardRedeemer.
class GiftCard < ApplicationRecord
  class InsufficientBalance < StandardError; end

  CODE_LENGTH = 16

  belongs_to :purchaser, class_name: "User", optional: true
  has_many :redemptions, class_name: "GiftCardRedemption", dependent: :restrict_with_error

  validates :code, presence: true, uniqueness: true, length: { is: CODE_LENGTH }
  validates :balance_cents, numericality: { only_integer: true, greater_than_or_equal_to: 0 }
  validates :currency, inclusion: { in: Order::CURRENCIES }

  before_validation :generate_code, on: :create
  before_validation -> { self.initial_cents ||= balance_cents }, on: :create

  scope :usable, lambda {
    where(disabled_at: nil).where("balance_cents > 0").where("expires_on IS NULL OR expires_on >= ?", Date.current)
  }

  def self.lookup(code)
    usable.find_by(code: normalize(code))
  end

  # Customers type codes with spaces and dashes ("ABCD-EFGH-...").
  def self.normalize(code)
    code.to_s.upcase.delete("^A-Z0-9")
  end

  # Only the last four characters are ever shown or logged.
  def masked_code
    "•••• #{code.last(4)}"
  end

  def debit!(amount_cents, order:)
    with_lock do
      raise InsufficientBalance, "#{masked_code} has #{balance_cents} cents left" if amount_cents > balance_cents

      update!(balance_cents: balance_cents - amount_cents)
      redemptions.create!(order: order, amount_cents: amount_cents)
    end
  end

  private

  def generate_code
    self.code ||= SecureRandom.alphanumeric(CODE_LENGTH).upcase
  end
end
