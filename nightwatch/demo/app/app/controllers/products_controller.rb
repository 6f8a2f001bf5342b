class ProductsController < ApplicationController
  before_action :require_staff, only: :update
  before_action :set_product, only: %i[show update]

  PER_PAGE = 24

  def index
    @products = Product.visible.includes(:category, image_attachment: :blob).order(:name)
    @products = @products.search(params[:q]) if params[:q].present?
    @products = @products.where(category_id: Category.find_by!(slug: params[:category]).subtree_ids) if params[:category]
    @products = @products.page(params[:page]).per(PER_PAGE)
    @price_labels = @products.to_h { |product| [product.id, MoneyFormat.compact(product.price_cents, product.currency)] }
  end

  def show
    @breadcrumbs = @product.category.breadcrumb_names
    @price = MoneyFormat.format(@product.price_cents, @product.currency)
    @related = Product.visible.in_stock.where(category_id: @product.category_id).where.not(id: @product.id).limit(4)
  end

  # Staff edit prices and stock inline from the product page.
  def update
    if @product.update(product_params)
      redirect_to product_path(@product), notice: t("products.updated")
    else
      render :show, status: :unprocessable_entity
    end
  end

  private

  def set_product
    @product = Product.visible.find_by!(slug: params[:slug])
  end

  def product_params
    params.require(:product).permit(:name, :description, :price_cents, :stock, :published, :lock_version)
  end
end
