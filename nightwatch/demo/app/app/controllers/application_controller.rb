class ApplicationController < ActionController::Base
  protect_from_forgery with: :exception

  before_action :set_locale
  before_action :load_cart

  helper_method :current_user, :signed_in?, :current_cart

  private

  def current_user
    return @current_user if defined?(@current_user)

    @current_user = User.find_by(id: session[:user_id])
  end

  def signed_in?
    current_user.present?
  end

  def require_login
    return if signed_in?

    session[:return_to] = request.fullpath if request.get?
    redirect_to new_session_path, alert: t("sessions.required")
  end

  def require_staff
    head :forbidden unless current_user&.staff?
  end

  # The cart is an Order in the "cart" state, remembered in the session for
  # guests and attached to the user once they sign in.
  def load_cart
    @cart = Order.find_by(id: session[:cart_id], state: "cart") if session[:cart_id]
  end

  def current_cart
    @cart ||= Order.create!(state: "cart", user: current_user, currency: "USD").tap do |order|
      session[:cart_id] = order.id
    end
  end

  def set_locale
    I18n.locale = params[:locale].presence_in(I18n.available_locales.map(&:to_s)) || I18n.default_locale
  end
end
