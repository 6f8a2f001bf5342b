class SessionsController < ApplicationController
  # Throttled per IP and per email by Rack::Attack (config/initializers/rack_attack.rb).
  def new; end

  def create
    user = User.find_by(email: params[:email].to_s.strip.downcase)
    if user&.authenticate(params[:password])
      cart_id = session[:cart_id]
      reset_session
      session[:user_id] = user.id
      adopt_guest_cart(cart_id, user)
      user.claim_guest_orders!
      redirect_to session.delete(:return_to) || root_path
    else
      flash.now[:alert] = t("sessions.invalid")
      render :new, status: :unprocessable_entity
    end
  end

  def destroy
    reset_session
    redirect_to root_path, notice: t("sessions.signed_out")
  end

  private

  # A guest's cart follows them into their account when they sign in at checkout.
  def adopt_guest_cart(cart_id, user)
    return if cart_id.nil?

    cart = Order.find_by(id: cart_id, state: "cart", user_id: nil)
    return if cart.nil?

    cart.update!(user: user)
    session[:cart_id] = cart.id
  end
end
