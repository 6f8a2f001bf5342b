namespace :orders do
  desc "Compare paid orders of the last N days (default 2) with Stripe charges and report mismatches"
  task :reconcile, [:days] => :environment do |_task, args|
    days = Integer(args.fetch(:days, 2))
    gateway = PaymentGateway.new
    mismatches = []

    Order.paid.where(paid_at: days.days.ago..).where.not(charge_id: nil).find_each do |order|
      charge = gateway.retrieve_charge(order.charge_id)
      expected = order.card_charged_cents
      next if charge.amount == expected && charge.captured

      mismatches << "#{order.number}: order #{expected} cents, Stripe #{charge.amount} cents (captured: #{charge.captured})"
    end

    puts(mismatches.empty? ? "orders:reconcile: all #{days}-day orders match" : mismatches)
  end

  desc "Delete carts untouched for 7 days"
  task purge_abandoned_carts: :environment do
    count = Order.abandoned.in_batches(of: 1_000).delete_all
    puts "orders:purge_abandoned_carts: #{count} carts deleted"
  end
end
