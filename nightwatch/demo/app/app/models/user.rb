# A registered customer (or a staff member, see #staff?).
#
# Guests check out without an account: their orders have no user and carry
# Order#guest_email instead.
class User < ApplicationRecord
  has_secure_password

  has_many :orders, dependent: :nullify

  normalizes :email, with: ->(email) { email.strip.downcase }

  validates :email, presence: true, uniqueness: true, format: { with: URI::MailTo::EMAIL_REGEXP }
  validates :name, presence: true, length: { maximum: 120 }
  validates :password, length: { minimum: 12 }, allow_nil: true

  scope :marketing_opt_in, -> { where(marketing_opt_in: true) }
  scope :staff, -> { where(staff: true) }

  def display_name
    name.presence || email.split("@").first
  end

  def first_order?
    orders.placed.none?
  end

  def lifetime_value_cents
    orders.paid.sum(:total_cents)
  end

  # Orders a guest placed with this address before signing up are attached on
  # first login, so they show up in the account.
  def claim_guest_orders!
    Order.where(user_id: nil, guest_email: email).update_all(user_id: id, updated_at: Time.current)
  end
end
