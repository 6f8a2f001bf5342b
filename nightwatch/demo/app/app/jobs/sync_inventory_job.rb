# Pulls stock levels from the warehouse (WMS) every 10 minutes and updates
# products whose stock changed. Scheduled by sidekiq-cron (config/initializers/sidekiq.rb).
class SyncInventoryJob
  include Sidekiq::Job
  sidekiq_options queue: :low, retry: 3, lock: :until_executed

  BATCH_SIZE = 500

  def perform
    client = InventoryClient.new
    changed = 0

    Product.where(digital: false, discarded_at: nil).find_in_batches(batch_size: BATCH_SIZE) do |products|
      levels = client.stock_levels(products.map(&:sku))
      products.each do |product|
        level = levels[product.sku]
        next if level.nil? || level == product.stock

        product.update_columns(stock: level, updated_at: Time.current)
        changed += 1
      end
    end

    Sidekiq.logger.info("inventory sync: #{changed} products changed")
  end
end
