class CategoriesController < ApplicationController
  def index
    @roots = Category.roots.includes(:children)
  end

  def show
    @category = Category.find_by!(slug: params[:slug])
    @children = @category.children
    @products = Product.visible
                       .where(category_id: @category.subtree_ids)
                       .includes(image_attachment: :blob)
                       .order(:name)
                       .page(params[:page])
  end
end
