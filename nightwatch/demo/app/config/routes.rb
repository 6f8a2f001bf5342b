require "sidekiq/web"

Rails.application.routes.draw do
  root "products#index"

  # Load balancer health check (Rails::HealthController).
  get "up" => "rails/health#show", as: :rails_health_check

  resources :products, only: %i[index show update], param: :slug
  resources :categories, only: %i[index show], param: :slug

  get "cart" => "checkout#show"
  resource :checkout, only: %i[show update create], controller: "checkout"

  resources :orders, only: %i[index show] do
    member do
      post :cancel
      get :invoice
    end
  end

  # Campaign links: /c/SPRING25 remembers the coupon until checkout.
  get "c/:code" => "checkout#campaign", as: :campaign

  resources :users, only: %i[new create edit update]
  resource :session, only: %i[new create destroy]

  post "webhooks/stripe" => "webhooks#stripe"

  namespace :api do
    namespace :v1 do
      resources :orders, only: %i[index show create] do
        post :refund, on: :member
      end
    end
  end

  # Job dashboard for staff only.
  constraints ->(request) { User.find_by(id: request.session[:user_id])&.staff? } do
    mount Sidekiq::Web => "/admin/sidekiq"
  end
end
