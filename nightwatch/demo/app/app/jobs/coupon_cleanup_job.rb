# Deletes coupons that expired more than a day ago, nightly at 03:00 UTC.
#
# Orders keep their stored totals; the foreign key nullifies orders.coupon_id.
class CouponCleanupJob
  include Sidekiq::Job
  sidekiq_options queue: :low, retry: 1

  GRACE_PERIOD = 1.day

  def perform
    deleted = 0
    Coupon.where(expires_at: ...GRACE_PERIOD.ago).in_batches(of: 1_000) do |batch|
      deleted += batch.delete_all
    end
    Sidekiq.logger.info("coupon cleanup: #{deleted} expired coupons deleted")
  end
end
