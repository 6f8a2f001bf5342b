class Product < ApplicationRecord
  class InsufficientStock < StandardError; end

  belongs_to :category
  has_many :line_items, dependent: :restrict_with_error
  has_one_attached :image

  validates :sku, presence: true, uniqueness: true
  validates :name, :slug, presence: true
  validates :slug, uniqueness: true
  validates :price_cents, numericality: { only_integer: true, greater_than_or_equal_to: 0 }
  validates :stock, numericality: { only_integer: true, greater_than_or_equal_to: 0 }

  scope :visible, -> { where(published: true, discarded_at: nil) }
  scope :in_stock, -> { where("stock > 0") }
  scope :search, ->(term) { where("products.name ILIKE ?", "%#{sanitize_sql_like(term)}%") }

  def to_param
    slug
  end

  def in_stock?
    digital? || stock.positive?
  end

  # Free samples are added to carts by campaigns; they still go through checkout.
  def free_sample?
    price_cents.zero?
  end

  def reserve!(quantity)
    return if digital?

    with_lock do
      raise InsufficientStock, "only #{stock} left of #{sku}" if stock < quantity

      update!(stock: stock - quantity)
    end
  end

  def discard!
    update!(discarded_at: Time.current, published: false)
  end
end
