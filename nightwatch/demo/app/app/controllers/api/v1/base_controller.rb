module Api
  module V1
    # Partner API: JSON only, authenticated with a per-partner bearer token
    # (Partner.authenticate). No session, no CSRF token.
    class BaseController < ActionController::API
      include ActionController::HttpAuthentication::Token::ControllerMethods

      before_action :authenticate_partner!

      rescue_from ActiveRecord::RecordNotFound do
        render_error(:not_found, "not found")
      end

      rescue_from ActiveRecord::RecordInvalid do |e|
        render_error(:unprocessable_entity, e.record.errors.full_messages.to_sentence)
      end

      private

      attr_reader :current_partner

      def authenticate_partner!
        @current_partner = authenticate_with_http_token { |token, _options| Partner.authenticate(token) }
        render_error(:unauthorized, "invalid or missing API token") if @current_partner.nil?
      end

      def render_error(status, message)
        render json: { error: { status: Rack::Utils.status_code(status), message: message } }, status: status
      end

      def page
        [params.fetch(:page, 1).to_i, 1].max
      end
    end
  end
end
