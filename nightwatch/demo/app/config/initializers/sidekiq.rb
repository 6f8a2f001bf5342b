# Sidekiq talks to its own Redis (REDIS_SIDEKIQ_URL); the cache uses another instance.
redis = { url: ENV.fetch("REDIS_SIDEKIQ_URL", "redis://localhost:6379/1"), network_timeout: 3 }

Sidekiq.configure_server do |config|
  config.redis = redis

  # Recurring jobs, see README "Jobs".
  config.on(:startup) do
    Sidekiq::Cron::Job.load_from_hash(
      "sync_inventory" => { "cron" => "*/10 * * * *", "class" => "SyncInventoryJob", "queue" => "low" },
      "coupon_cleanup" => { "cron" => "0 3 * * *", "class" => "CouponCleanupJob", "queue" => "low" }
    )
  end
end

Sidekiq.configure_client do |config|
  config.redis = redis
end
