class UsersController < ApplicationController
  before_action :require_login, only: %i[edit update]

  def new
    @user = User.new
  end

  def create
    @user = User.new(user_params)
    if @user.save
      reset_session
      session[:user_id] = @user.id
      @user.claim_guest_orders!
      redirect_to root_path, notice: t("users.welcome", name: @user.display_name)
    else
      render :new, status: :unprocessable_entity
    end
  end

  def edit
    @user = current_user
  end

  def update
    @user = current_user
    if @user.update(user_params.except(:email))
      redirect_to edit_user_path(@user), notice: t("users.updated")
    else
      render :edit, status: :unprocessable_entity
    end
  end

  private

  def user_params
    params.require(:user).permit(:email, :name, :password, :password_confirmation, :marketing_opt_in)
  end
end
