# Stripe keys come from the encrypted credentials (stripe.secret_key, stripe.webhook_secret).
# Never put a key in this file or in an environment variable checked into a Procfile.
Stripe.api_key = Rails.application.credentials.dig(:stripe, :secret_key)
Stripe.api_version = "2023-10-16"
Stripe.max_network_retries = 2
Stripe.open_timeout = 5
Stripe.read_timeout = 20

Rails.application.config.x.stripe_webhook_secret = Rails.application.credentials.dig(:stripe, :webhook_secret)
