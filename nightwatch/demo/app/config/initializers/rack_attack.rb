# Throttles for login and the partner API. Blocked requests get 429 and never
# reach the controllers.
class Rack::Attack
  Rack::Attack.cache.store = ActiveSupport::Cache::RedisCacheStore.new(url: ENV.fetch("REDIS_CACHE_URL", "redis://localhost:6379/2"))

  throttle("logins/ip", limit: 10, period: 60) do |request|
    request.ip if request.path == "/session" && request.post?
  end

  throttle("logins/email", limit: 5, period: 300) do |request|
    request.params["email"].to_s.strip.downcase.presence if request.path == "/session" && request.post?
  end

  throttle("api/token", limit: 300, period: 60) do |request|
    request.get_header("HTTP_AUTHORIZATION").to_s.last(12).presence if request.path.start_with?("/api/")
  end

  # Scanners probing for the git directory.
  blocklist("scanners") do |request|
    request.path.start_with?("/.git")
  end
end
