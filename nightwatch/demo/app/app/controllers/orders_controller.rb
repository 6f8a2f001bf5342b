class OrdersController < ApplicationController
  before_action :require_login, only: :index
  before_action :set_order, only: %i[show cancel invoice]

  def index
    @orders = current_user.orders.placed.recent.includes(line_items: :product).page(params[:page]).per(20)
  end

  # Signed-in customers reach their orders from the account page; guests come
  # from the signed link in their confirmation email (?token=...).
  def show
    @line_items = @order.line_items.includes(:product)
    @contact_email = @order.user.email
    @gift_card_cents = @order.gift_card_redemptions.sum(:amount_cents)
    @can_cancel = @order.cancellable?
  end

  def cancel
    unless @order.cancellable?
      redirect_to order_path(@order, token: params[:token]), alert: t("orders.cancel_too_late")
      return
    end

    Order.transaction do
      GiftCardRedeemer.reverse!(@order)
      @order.update!(state: "cancelled")
    end
    redirect_to order_path(@order, token: params[:token]), notice: t("orders.cancelled")
  end

  def invoice
    if @order.invoice_number.blank?
      redirect_to order_path(@order, token: params[:token]), alert: t("orders.invoice_pending")
    else
      send_data render_to_string(template: "orders/invoice", formats: [:html]),
                filename: "#{@order.invoice_number}.html", type: "text/html"
    end
  end

  private

  def set_order
    @order =
      if params[:token].present?
        Order.find_signed!(params[:token], purpose: :guest_access)
      elsif signed_in?
        current_user.orders.find(params[:id])
      else
        raise ActiveRecord::RecordNotFound, "sign in or use the link from the confirmation email"
      end
  end
end
