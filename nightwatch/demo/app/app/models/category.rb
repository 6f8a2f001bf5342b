# Categories form a tree that the merchandising team edits in the admin
# (drag and drop re-parenting). Products belong to a leaf or an inner node.
class Category < ApplicationRecord
  belongs_to :parent, class_name: "Category", optional: true
  has_many :children, -> { order(:position) }, class_name: "Category", foreign_key: :parent_id,
                                                inverse_of: :parent, dependent: :restrict_with_error
  has_many :products, dependent: :restrict_with_error

  validates :name, presence: true
  validates :slug, presence: true, uniqueness: true
  validate :parent_is_not_self

  scope :roots, -> { where(parent_id: nil).order(:position) }

  def to_param
    slug
  end

  def root?
    parent_id.nil?
  end

  # Root first, e.g. [Home, Kitchen, Knives]. Used for breadcrumbs.
  def ancestors_path
    root? ? [self] : parent.ancestors_path + [self]
  end

  def breadcrumb_names
    ancestors_path.map(&:name)
  end

  def depth
    ancestors_path.size - 1
  end

  # Self and every category below it, for "all products in Kitchen".
  def subtree_ids
    ids = [id]
    frontier = [id]
    until frontier.empty?
      frontier = Category.where(parent_id: frontier).pluck(:id) - ids
      ids.concat(frontier)
    end
    ids
  end

  private

  def parent_is_not_self
    errors.add(:parent_id, "can't be the category itself") if parent_id.present? && parent_id == id
  end
end
