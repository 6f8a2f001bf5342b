require_relative "boot"

require "rails"
require "active_model/railtie"
require "active_job/railtie"
require "active_record/railtie"
require "active_storage/engine"
require "action_controller/railtie"
require "action_mailer/railtie"
require "action_view/railtie"

Bundler.require(*Rails.groups)

module Storefront
  class Application < Rails::Application
    config.load_defaults 7.1

    # lib/ holds plain Ruby (CSV importer, money formatting); tasks are loaded by rake.
    config.autoload_lib(ignore: %w[assets tasks])

    config.time_zone = "UTC"
    config.i18n.available_locales = %i[en de fr]
    config.i18n.default_locale = :en

    # Sidekiq runs the jobs; ActiveJob is only used by ActionMailer's deliver_later.
    config.active_job.queue_adapter = :sidekiq

    config.active_storage.service = :amazon
    config.active_storage.variant_processor = :vips

    # Requests that run longer than this are aborted by rack-timeout (Rack::Timeout::RequestTimeoutException).
    # The load balancer gives up at 30 s, so anything past 15 s is wasted work.
    config.middleware.insert_before Rack::Runtime, Rack::Timeout, service_timeout: 15

    config.middleware.use Rack::Attack

    # Partner API clients send JSON only; keep the session cookie off those responses.
    config.session_store :cookie_store, key: "_storefront_session", expire_after: 14.days

    config.action_mailer.default_url_options = { host: "shop.example.com", protocol: "https" }
    config.action_mailer.deliver_later_queue_name = "mailers"

    config.generators do |g|
      g.test_framework :rspec
      g.helper false
      g.assets false
    end
  end
end
