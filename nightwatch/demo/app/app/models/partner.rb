# A marketplace integration using the partner API (app/controllers/api/v1).
#
# Tokens are shown once when the partner is created; only their SHA-256 digest is stored.
class Partner < ApplicationRecord
  has_many :orders, dependent: :restrict_with_error

  validates :name, presence: true
  validates :api_token_digest, presence: true, uniqueness: true

  scope :active, -> { where(active: true) }

  def self.authenticate(token)
    return nil if token.blank?

    active.find_by(api_token_digest: digest(token))
  end

  def self.digest(token)
    OpenSSL::Digest::SHA256.hexdigest(token)
  end

  # Returns the plain token; call once and hand it to the partner.
  def rotate_token!
    token = SecureRandom.base58(40)
    update!(api_token_digest: self.class.digest(token))
    token
  end
end
