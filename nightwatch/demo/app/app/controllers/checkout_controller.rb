# Cart review, coupon and gift card codes, and payment.
#
# The cart is the current Order in the "cart" state (see ApplicationController#load_cart).
class CheckoutController < ApplicationController
  before_action :require_cart, except: :campaign

  # GET /cart, GET /checkout
  def show
    apply_campaign_coupon if session[:campaign_coupon_id]
    @totals = PriceCalculator.new(@cart).call
    @gift_card = GiftCardRedeemer.new(@cart, session[:gift_card_code]).preview if session[:gift_card_code]
  rescue GiftCardRedeemer::Error => e
    session.delete(:gift_card_code)
    flash.now[:alert] = e.message
  end

  # PATCH /checkout: quantities, coupon code, gift card code.
  def update
    update_quantities(params.require(:quantities)) if params[:quantities]
    apply_coupon_code(params[:coupon_code]) if params[:coupon_code].present?
    session[:gift_card_code] = GiftCard.normalize(params[:gift_card_code]) if params[:gift_card_code].present?
    @cart.recalculate!
    redirect_to checkout_path
  end

  # POST /checkout: place the order, redeem the gift card, charge the rest.
  def create
    @cart.update!(checkout_params)
    @cart.recalculate!
    Order.transaction do
      @cart.place!
      GiftCardRedeemer.new(@cart, session[:gift_card_code]).redeem! if session[:gift_card_code]
      charge = PaymentGateway.new.charge(@cart, payment_method_id: params.require(:payment_method_id))
      @cart.mark_paid!(charge.id)
    end
    session.delete(:cart_id)
    session.delete(:gift_card_code)
    redirect_to order_path(@cart, token: @cart.signed_id(purpose: :guest_access)), notice: t("checkout.thanks")
  rescue PaymentGateway::PaymentFailed, GiftCardRedeemer::Error => e
    redirect_to checkout_path, alert: e.message
  end

  # GET /c/:code. Campaign links remember the coupon until the customer reaches checkout.
  def campaign
    coupon = Coupon.redeemable(params[:code])
    session[:campaign_coupon_id] = coupon.id if coupon
    redirect_to root_path
  end

  private

  def require_cart
    redirect_to root_path, alert: t("checkout.empty") if @cart.nil? || @cart.line_items.empty?
  end

  def apply_campaign_coupon
    coupon = Coupon.find(session.delete(:campaign_coupon_id))
    @cart.update!(coupon: coupon) if coupon.active? && @cart.coupon.nil?
  end

  def apply_coupon_code(code)
    coupon = Coupon.redeemable(code)
    if coupon.nil? || coupon.exhausted?
      flash[:alert] = t("checkout.coupon_invalid", code: code.to_s.upcase)
    else
      @cart.update!(coupon: coupon)
    end
  end

  def update_quantities(quantities)
    @cart.line_items.each do |item|
      quantity = quantities[item.id.to_s].to_i
      quantity.positive? ? item.update!(quantity: quantity) : item.destroy!
    end
  end

  def checkout_params
    params.require(:checkout).permit(:guest_email, :shipping_region, :currency)
  end
end
