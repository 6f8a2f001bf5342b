module Api
  module V1
    # Orders placed by marketplace partners on behalf of their customers.
    class OrdersController < BaseController
      PER_PAGE = 50

      # Support finds a partner's calls about one order in New Relic by the order id
      # in the transaction name (Controller/api/v1/orders/1234/refund).
      before_action only: %i[show refund] do
        NewRelic::Agent.set_transaction_name("api/v1/orders/#{params[:id]}/#{action_name}", category: :uri)
      end

      # GET /api/v1/orders?since=2026-11-01
      def index
        orders = current_partner.orders.placed.recent.includes(:line_items)
        orders = orders.where(created_at: Date.iso8601(params[:since])..) if params[:since]
        orders = orders.page(page).per(PER_PAGE)
        render json: { orders: orders.map { |order| serialize(order) }, next_page: orders.next_page }
      end

      def show
        render json: { order: serialize(current_partner.orders.find(params[:id])) }
      end

      # POST /api/v1/orders. The partner has already charged its customer; we
      # only reserve stock and ship. external_reference makes retries idempotent.
      def create
        order = current_partner.orders.find_or_initialize_by(external_reference: order_params.fetch(:reference))
        return render(json: { order: serialize(order) }, status: :ok) if order.persisted?

        Order.transaction do
          order.assign_attributes(order_params.except(:reference, :items).merge(state: "cart"))
          order_params.fetch(:items).each do |item|
            order.line_items.build(product: Product.visible.find_by!(sku: item.fetch(:sku)), quantity: item.fetch(:quantity))
          end
          order.save!
          order.recalculate!
          order.place!
        end
        render json: { order: serialize(order) }, status: :created
      end

      # POST /api/v1/orders/:id/refund. Full refunds only; partial refunds go
      # through the support team in the Stripe dashboard.
      def refund
        order = current_partner.orders.find(params[:id])
        return render_error(:unprocessable_entity, "order #{order.number} is not refundable") unless order.refundable?

        refund = PaymentGateway.new.refund(order.charge_id, amount_cents: order.total_cents, order: order)
        Order.transaction do
          GiftCardRedeemer.reverse!(order)
          order.update!(state: "refunded", refunded_at: Time.current)
        end
        render json: { order: serialize(order), refund: { id: refund.id, amount_cents: refund.amount_cents } }
      end

      private

      def order_params
        params.require(:order).permit(:reference, :currency, :shipping_region, :guest_email, items: %i[sku quantity])
      end

      def serialize(order)
        {
          id: order.id,
          number: order.number,
          reference: order.external_reference,
          state: order.state,
          currency: order.currency,
          total_cents: order.total_cents,
          items: order.line_items.map { |item| { sku: item.sku, quantity: item.quantity, unit_price_cents: item.unit_price_cents } }
        }
      end
    end
  end
end
