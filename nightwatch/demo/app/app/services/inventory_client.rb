require "net/http"
require "json"

# Client for the warehouse management system (WMS) inventory API.
#
# Stock levels are pulled every 10 minutes by SyncInventoryJob. The WMS is run
# by the logistics provider; its API is slow during their nightly stock count
# (02:00-04:00 UTC) and answers 429 when we page too fast.
class InventoryClient
  class Error < StandardError; end
  class RateLimited < Error; end

  DEFAULT_BASE_URL = "https://wms-api.logistics.example.com"
  PAGE_SIZE = 200

  def initialize(base_url: ENV.fetch("INVENTORY_API_URL", DEFAULT_BASE_URL),
                 token: Rails.application.credentials.dig(:inventory, :api_token))
    @base_url = base_url
    @token = token
  end

  # {"SKU-1" => 12, "SKU-2" => 0}; SKUs the WMS does not know are left out.
  def stock_levels(skus)
    skus.each_slice(PAGE_SIZE).each_with_object({}) do |page, levels|
      body = get("/v2/stock", skus: page.join(","))
      body.fetch("items").each { |item| levels[item.fetch("sku")] = item.fetch("available").to_i }
    end
  end

  def reserve(sku, quantity, reference:)
    post("/v2/reservations", sku: sku, quantity: quantity, reference: reference)
  end

  private

  def get(path, params = {})
    uri = URI.join(@base_url, path)
    uri.query = URI.encode_www_form(params)
    perform(uri, Net::HTTP::Get.new(uri))
  end

  def post(path, payload)
    uri = URI.join(@base_url, path)
    request = Net::HTTP::Post.new(uri)
    request.body = JSON.generate(payload)
    request["Content-Type"] = "application/json"
    perform(uri, request)
  end

  def perform(uri, request)
    request["Authorization"] = "Bearer #{@token}"
    request["Accept"] = "application/json"
    response = Net::HTTP.start(uri.host, uri.port, use_ssl: uri.scheme == "https") do |http|
      http.request(request)
    end
    handle(response)
  end

  def handle(response)
    case response
    when Net::HTTPSuccess then JSON.parse(response.body)
    when Net::HTTPTooManyRequests then raise RateLimited, "WMS rate limit, retry after #{response["Retry-After"]}s"
    else raise Error, "WMS answered #{response.code}: #{response.body.to_s.truncate(200)}"
    end
  end
end
