"""The error groups of the demo night: planted defects, noise, repeats, secrets and ordinary errors.

expected.yml is the answer key for the planted defects; ignore.yml drops the noise.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from nightwatch.demo.ruby_traces import (
        AP,
        AR,
        AS,
        CONTROLLER_STACK,
        MIDDLEWARE_STACK,
        NET_HTTP_READ,
        PG_QUERY,
        RAKE_STACK,
        RT,
        RUBY_LIB,
        SIDEKIQ_STACK,
        SQ,
        STRIPE_REQUEST,
        app,
        gem,
        stdlib,
    )

WEB_HOSTS = [f"storefront-web-7c9d5b8f4-{s}" for s in ("k2x9p", "m4q7z", "r8t2w", "v6n3c", "x1b5h", "z9f4d")]
WORKER_HOSTS = [f"storefront-worker-5f7a9c6d2-{s}" for s in ("a3k8m", "d7p2q", "h5s9t")]
STALE_KEY_HOST = WEB_HOSTS[3]


@dataclass
class Group:
    """One facet of the NRQL answer (error class x transaction) and its samples."""

    error_class: str
    transaction: str
    message: str
    occurrences: int
    frames: list[str]
    http_status: int | None = 500
    uri: str | None = None
    method: str = "GET"
    hosts: list[str] = field(default_factory=lambda: WEB_HOSTS)
    span_hours: float = 20.0
    trace_attributes: dict[str, str] = field(default_factory=dict)

    @property
    def web(self) -> bool:
        return self.uri is not None


def web(error_class: str, transaction: str, message: str, occurrences: int, uri: str, frames: list[str],
        **kw) -> Group:
    return Group(error_class, transaction, message, occurrences, frames, uri=uri, **kw)


def job(error_class: str, job_class: str, message: str, occurrences: int, frames: list[str], **kw) -> Group:
    transaction = f"OtherTransaction/SidekiqJob/{job_class}/perform"
    return Group(error_class, transaction, message, occurrences, frames + SIDEKIQ_STACK, http_status=None,
                 hosts=WORKER_HOSTS, **kw)


def planted_bugs() -> list[Group]:
    """The defects of the demo application; expected.yml is the answer key."""
    show_order = app("app/controllers/orders_controller.rb", "@order.user.email", "show")
    return [
        web("NoMethodError", "Controller/orders/show", "undefined method `email' for nil:NilClass", 87,
            "/orders/{id}", [show_order, *CONTROLLER_STACK]),
        web("ActiveRecord::RecordNotFound", "Controller/checkout/show", "Couldn't find Coupon with 'id'={id}", 146,
            "/checkout", [
                gem(AR, "active_record/core.rb", 253, "find"),
                app("app/controllers/checkout_controller.rb", "Coupon.find(session.delete", "apply_campaign_coupon"),
                app("app/controllers/checkout_controller.rb", "apply_campaign_coupon if session", "show"),
                *CONTROLLER_STACK,
            ], http_status=404),
        web("ZeroDivisionError", "Controller/checkout/show", "divided by 0", 19, "/cart", [
            app("app/services/price_calculator.rb", "discount * item.total_cents / subtotal", "/"),
            app("app/services/price_calculator.rb", "discount * item.total_cents / subtotal", "block in spread_discount"),
            app("app/services/price_calculator.rb", "discount * item.total_cents / subtotal", "to_h"),
            app("app/services/price_calculator.rb", "discount * item.total_cents / subtotal", "spread_discount"),
            app("app/services/price_calculator.rb", "item_discounts: spread_discount", "call"),
            app("app/controllers/checkout_controller.rb", "@totals = PriceCalculator.new(@cart).call", "show"),
            *CONTROLLER_STACK,
        ]),
        web("KeyError", "Controller/webhooks/stripe", 'key not found: "order_id"', 412, "/webhooks/stripe", [
            app("app/controllers/webhooks_controller.rb", 'charge.fetch("metadata").fetch("order_id")', "fetch"),
            app("app/controllers/webhooks_controller.rb", 'charge.fetch("metadata").fetch("order_id")', "charge_refunded"),
            app("app/controllers/webhooks_controller.rb", 'when "charge.refunded"', "stripe"),
            *CONTROLLER_STACK,
        ], method="POST", hosts=WEB_HOSTS[:4]),
        job("ArgumentError", "InvoiceJob", "wrong number of arguments (given 2, expected 1)", 311, [
            app("app/services/price_calculator.rb", "def initialize(order)", "initialize"),
            app("app/jobs/invoice_job.rb", "PriceCalculator.new(order, order.coupon)", "new"),
            app("app/jobs/invoice_job.rb", "PriceCalculator.new(order, order.coupon)", "perform"),
        ], span_hours=23.5),
        web("TypeError", "Controller/products/index", "no implicit conversion of Float into String", 1986,
            "/products", [
                app("lib/money_format.rb", "symbol + (cents / 100.0).round(2)", "+"),
                app("lib/money_format.rb", "symbol + (cents / 100.0).round(2)", "compact"),
                app("app/controllers/products_controller.rb", "MoneyFormat.compact(", "block in index"),
                gem(AR, "active_record/relation/delegation.rb", 100, "each"),
                gem(AR, "active_record/relation/delegation.rb", 100, "each"),
                app("app/controllers/products_controller.rb", "MoneyFormat.compact(", "to_h"),
                app("app/controllers/products_controller.rb", "MoneyFormat.compact(", "index"),
                *CONTROLLER_STACK,
            ], span_hours=18.5),
        huge_recursion(),
        job("Net::ReadTimeout", "SyncInventoryJob", "Net::ReadTimeout with #<TCPSocket:(closed)>", 38, [
            *NET_HTTP_READ,
            app("app/services/inventory_client.rb", "http.request(request)", "block in perform"),
            stdlib("net/http.rb", 1570, "start"),
            stdlib("net/http.rb", 1029, "start"),
            app("app/services/inventory_client.rb", "Net::HTTP.start(", "perform"),
            app("app/services/inventory_client.rb", "perform(uri, Net::HTTP::Get.new(uri))", "get"),
            app("app/services/inventory_client.rb", 'body = get("/v2/stock"', "block in stock_levels"),
            app("app/services/inventory_client.rb", "skus.each_slice(PAGE_SIZE)", "each_slice"),
            app("app/services/inventory_client.rb", "skus.each_slice(PAGE_SIZE)", "each"),
            app("app/services/inventory_client.rb", "skus.each_slice(PAGE_SIZE)", "each_with_object"),
            app("app/services/inventory_client.rb", "skus.each_slice(PAGE_SIZE)", "stock_levels"),
            app("app/jobs/sync_inventory_job.rb", "client.stock_levels(", "block in perform"),
            gem(AR, "active_record/relation/batches.rb", 146, "block in find_in_batches"),
            gem(AR, "active_record/relation/batches.rb", 145, "find_in_batches"),
            app("app/jobs/sync_inventory_job.rb", "find_in_batches(batch_size: BATCH_SIZE)", "perform"),
        ], span_hours=3.0),
        web("Date::Error", "Controller/api/v1/orders/index", "invalid date", 44, "/api/v1/orders", [
            app("app/controllers/api/v1/orders_controller.rb", "Date.iso8601(params[:since])", "iso8601"),
            app("app/controllers/api/v1/orders_controller.rb", "Date.iso8601(params[:since])", "index"),
            *CONTROLLER_STACK,
        ]),
        *refund_repeats(),
    ]


def huge_recursion() -> Group:
    """SystemStackError from a cycle in the category tree: ~10,000 frames, the one huge trace of the night."""
    recursion = app("app/models/category.rb", "parent.ancestors_path + [self]", "ancestors_path")
    loading_parent = [
        gem(AS, "active_support/notifications/instrumenter.rb", 58, "instrument"),
        gem(AR, "active_record/connection_adapters/abstract_adapter.rb", 1143, "log"),
        gem(AR, "active_record/connection_adapters/postgresql/database_statements.rb", 160, "exec_no_cache"),
        gem(AR, "active_record/connection_adapters/postgresql_adapter.rb", 894, "exec_cache"),
        gem(AR, "active_record/connection_adapters/postgresql/database_statements.rb", 54, "internal_exec_query"),
        gem(AR, "active_record/connection_adapters/abstract/database_statements.rb", 630, "select"),
        gem(AR, "active_record/connection_adapters/abstract/database_statements.rb", 71, "select_all"),
        gem(AR, "active_record/connection_adapters/abstract/query_cache.rb", 115, "select_all"),
        gem(AR, "active_record/querying.rb", 63, "_query_by_sql"),
        gem(AR, "active_record/statement_cache.rb", 150, "execute"),
        gem(AR, "active_record/associations/singular_association.rb", 48, "find_target"),
        gem(AR, "active_record/associations/association.rb", 175, "load_target"),
        gem(AR, "active_record/associations/association.rb", 50, "reload"),
        gem(AR, "active_record/associations/singular_association.rb", 9, "reader"),
        gem(AR, "active_record/associations/builder/association.rb", 104, "parent"),
    ]
    frames = [
        *loading_parent,
        *[recursion] * 10_012,
        app("app/models/category.rb", "ancestors_path.map(&:name)", "breadcrumb_names"),
        app("app/controllers/products_controller.rb", "@product.category.breadcrumb_names", "show"),
        *CONTROLLER_STACK,
    ]
    return web("SystemStackError", "Controller/products/show", "stack level too deep", 23, "/products/{slug}",
               frames, span_hours=8.5)


def refund_repeats() -> list[Group]:
    """One defect seen under three transaction names: the partner API puts the order id in them."""
    frames = [
        *STRIPE_REQUEST,
        app("app/services/payment_gateway.rb", "refund = Stripe::Refund.create(", "refund"),
        app("app/controllers/api/v1/orders_controller.rb", "amount_cents: order.total_cents", "refund"),
        *CONTROLLER_STACK,
    ]
    cases = [(1001, "45.99", "25.99", 4), (1002, "120.00", "80.00", 3), (1007, "64.50", "14.50", 2)]
    return [
        web("Stripe::InvalidRequestError", f"Controller/api/v1/orders/{order_id}/refund",
            f"Refund amount (${total}) is greater than charge amount (${charged})", count,
            f"/api/v1/orders/{order_id}/refund", frames, method="POST", http_status=500, span_hours=6.0)
        for order_id, total, charged, count in cases
    ]


def secret_bearing() -> Group:
    """A key rotation missed on one pod: the error message carries the live key it tried."""
    return web(
        "Stripe::AuthenticationError", "Controller/checkout/create",
        "Invalid API Key provided: sk_live_DEMO0nly0Fake0Key", 57, "/checkout", [
            *STRIPE_REQUEST,
            app("app/services/payment_gateway.rb", "intent = Stripe::PaymentIntent.create(", "charge"),
            app("app/controllers/checkout_controller.rb", "charge = PaymentGateway.new.charge(", "block in create"),
            gem(AR, "active_record/connection_adapters/abstract/transaction.rb", 535, "block in within_new_transaction"),
            gem(AR, "active_record/connection_adapters/abstract/database_statements.rb", 342, "transaction"),
            gem(AR, "active_record/transactions.rb", 212, "transaction"),
            app("app/controllers/checkout_controller.rb", "Order.transaction do", "create"),
            *CONTROLLER_STACK,
        ], method="POST", http_status=500, hosts=[STALE_KEY_HOST], span_hours=5.0,
        trace_attributes={"db.connection": "postgres://storefront_app:Wq9vT2xLr8Kp-demo@db-primary.internal:5432/storefront_production"},
    )


def noise() -> list[Group]:
    """Errors the shipped ignore.yml drops: scanners, bots, health checks, deploys."""
    routing = "Controller/Middleware/Rack/ActionDispatch::Routing::RouteSet/call"
    csrf = gem(AP, "action_controller/metal/request_forgery_protection.rb", 283, "handle_unverified_request")
    return [
        web("ActionController::RoutingError", routing, 'No route matches [GET] "/wp-login.php"', 1840,
            "/wp-login.php", MIDDLEWARE_STACK, http_status=404),
        web("ActionDispatch::Http::Parameters::ParseError", "Controller/api/v1/orders/create",
            "unexpected token at '<?xml version=\"1.0\"?><methodCall><methodName>system.listMethods'", 233,
            "/api/v1/orders", [
                gem(AP, "action_dispatch/http/parameters.rb", 118, "rescue in parse_formatted_parameters"),
                gem(AP, "action_dispatch/http/parameters.rb", 112, "parse_formatted_parameters"),
                gem(AP, "action_dispatch/http/request.rb", 418, "POST"),
                gem(AP, "action_controller/metal/params_wrapper.rb", 297, "_perform_parameter_wrapping"),
                gem(AP, "action_controller/metal/params_wrapper.rb", 261, "process_action"),
                *CONTROLLER_STACK[12:],
            ], method="POST", http_status=400),
        web("ActionController::InvalidAuthenticityToken", "Controller/sessions/create",
            "Can't verify CSRF token authenticity.", 129, "/session", [
                csrf,
                gem(AP, "action_controller/metal/request_forgery_protection.rb", 257, "handle_unverified_request"),
                gem(AP, "action_controller/metal/request_forgery_protection.rb", 364, "verify_authenticity_token"),
                *CONTROLLER_STACK[4:],
            ], method="POST", http_status=422),
        web("Rack::Timeout::RequestTimeoutException", "Controller/rails/health/show",
            "Request waited 2ms, then ran for longer than 14998ms", 64, "/up", [
                gem(RT, "rails/health_controller.rb", 45, "show"),
                *CONTROLLER_STACK,
            ], span_hours=1.0),
        web("ActionController::BadRequest", "Controller/products/index",
            "Invalid query parameters: invalid %-encoding (%E0%A4%A)", 41, "/products", [
                gem(AP, "action_dispatch/http/request.rb", 419, "rescue in GET"),
                gem(AP, "action_dispatch/http/request.rb", 410, "GET"),
                gem(AP, "action_dispatch/http/parameters.rb", 50, "parameters"),
                *CONTROLLER_STACK[13:],
            ], http_status=400),
        web("ActionDispatch::Http::MimeNegotiation::InvalidType", "Controller/products/show",
            '"../../../../../../../../etc/passwd{{" is not a valid MIME type', 17, "/products/{slug}", [
                gem(AP, "action_dispatch/http/mime_negotiation.rb", 83, "rescue in formats"),
                gem(AP, "action_dispatch/http/mime_negotiation.rb", 72, "formats"),
                *CONTROLLER_STACK[13:],
            ], http_status=406),
        web("ActionController::UnknownHttpMethod", "Controller/Middleware/Rack/Rack::MethodOverride/call",
            "PROPFIND, accepted HTTP methods are OPTIONS, GET, HEAD, POST, PUT, DELETE, TRACE, CONNECT, PATCH",
            12, "/", [gem(AP, "action_dispatch/http/request.rb", 485, "check_method"),
                      gem(AP, "action_dispatch/http/request.rb", 160, "request_method"), *MIDDLEWARE_STACK[8:]],
            method="PROPFIND", http_status=405),
        web("ActionDispatch::RemoteIp::IpSpoofAttackError", "Controller/products/index",
            'IP spoofing attack?! HTTP_CLIENT_IP="10.12.0.7" HTTP_X_FORWARDED_FOR="203.0.113.54, 10.12.0.7"', 6,
            "/products", [gem(AP, "action_dispatch/middleware/remote_ip.rb", 134, "calculate_ip"),
                          *CONTROLLER_STACK[13:]], http_status=400),
        job("Sidekiq::Shutdown", "SyncInventoryJob", "Sidekiq::Shutdown", 9, [
            stdlib("net/protocol.rb", 229, "rbuf_fill"),
            app("app/services/inventory_client.rb", "http.request(request)", "block in perform"),
            app("app/services/inventory_client.rb", "Net::HTTP.start(", "perform"),
            app("app/jobs/sync_inventory_job.rb", "find_in_batches(batch_size: BATCH_SIZE)", "perform"),
        ], span_hours=0.3),
    ]


def ordinary() -> list[Group]:
    """Everything else of the night: infrastructure blips, bad input, data problems."""
    orders_index = app("app/controllers/orders_controller.rb", ".page(params[:page]).per(20)", "index")
    return [
        web("Rack::Timeout::RequestTimeoutException", "Controller/orders/index",
            "Request waited 11ms, then ran for longer than 14989ms", 34, "/orders",
            [*PG_QUERY, orders_index, *CONTROLLER_STACK]),
        web("ActiveRecord::RecordNotUnique", "Controller/users/create",
            'PG::UniqueViolation: ERROR:  duplicate key value violates unique constraint "index_users_on_email"\n'
            "DETAIL:  Key (email)=(jane.doe@example.com) already exists.", 6, "/users", [
                *PG_QUERY,
                gem(AR, "active_record/persistence.rb", 1248, "_create_record"),
                gem(AR, "active_record/transactions.rb", 351, "save"),
                app("app/controllers/users_controller.rb", "if @user.save", "create"),
                *CONTROLLER_STACK,
            ], method="POST"),
        web("ActionController::ParameterMissing", "Controller/api/v1/orders/create",
            "param is missing or the value is empty: order", 140, "/api/v1/orders", [
                gem(AP, "action_controller/metal/strong_parameters.rb", 489, "require"),
                app("app/controllers/api/v1/orders_controller.rb", "params.require(:order)", "order_params"),
                app("app/controllers/api/v1/orders_controller.rb", "order_params.fetch(:reference)", "create"),
                *CONTROLLER_STACK,
            ], method="POST", http_status=400),
        web("ActiveRecord::RecordInvalid", "Controller/api/v1/orders/create",
            "Validation failed: Line items quantity must be less than or equal to 99", 31, "/api/v1/orders", [
                gem(AR, "active_record/validations.rb", 84, "raise_validation_error"),
                gem(AR, "active_record/validations.rb", 55, "save!"),
                app("app/controllers/api/v1/orders_controller.rb", "order.save!", "block in create"),
                app("app/controllers/api/v1/orders_controller.rb", "Order.transaction do", "create", after="def create"),
                *CONTROLLER_STACK,
            ], method="POST", http_status=422),
        web("Product::InsufficientStock", "Controller/checkout/create", "only 0 left of KNF-8IN-CHEF", 78,
            "/checkout", [
                app("app/models/product.rb", "raise InsufficientStock", "block in reserve!"),
                gem(AR, "active_record/locking/pessimistic.rb", 96, "with_lock"),
                app("app/models/product.rb", "with_lock do", "reserve!"),
                app("app/models/order.rb", "item.product.reserve!(item.quantity)", "block (2 levels) in place!"),
                app("app/models/order.rb", "item.product.reserve!(item.quantity)", "place!"),
                app("app/controllers/checkout_controller.rb", "@cart.place!", "block in create"),
                app("app/controllers/checkout_controller.rb", "Order.transaction do", "create"),
                *CONTROLLER_STACK,
            ], method="POST"),
        web("RedisClient::CannotConnectError", "Controller/checkout/create",
            "Connection refused - connect(2) for 10.12.4.21:6379", 12, "/checkout", [
                "/usr/local/bundle/gems/redis-client-0.19.1/lib/redis_client/ruby_connection.rb:132:in `rescue in connect'",
                "/usr/local/bundle/gems/redis-client-0.19.1/lib/redis_client.rb:737:in `ensure_connected'",
                gem(SQ, "sidekiq/client.rb", 259, "raw_push"),
                gem(SQ, "sidekiq/job.rb", 371, "perform_async"),
                app("app/models/order.rb", "InvoiceJob.perform_async(id)", "mark_paid!"),
                app("app/controllers/checkout_controller.rb", "@cart.mark_paid!(charge.id)", "block in create"),
                app("app/controllers/checkout_controller.rb", "Order.transaction do", "create"),
                *CONTROLLER_STACK,
            ], method="POST", span_hours=0.2),
        web("ActiveRecord::StaleObjectError", "Controller/products/update",
            "Attempted to update a stale object: Product.", 2, "/products/{slug}", [
                gem(AR, "active_record/locking/optimistic.rb", 103, "_update_row"),
                gem(AR, "active_record/persistence.rb", 1227, "_update_record"),
                app("app/controllers/products_controller.rb", "if @product.update(product_params)", "update"),
                *CONTROLLER_STACK,
            ], method="PATCH", http_status=409),
        web("ActiveRecord::ConnectionTimeoutError", "Controller/categories/show",
            "could not obtain a connection from the pool within 5.000 seconds (waited 5.001 seconds); "
            "all pooled connections were in use", 23, "/categories/{slug}", [
                gem(AR, "active_record/connection_adapters/abstract/connection_pool/queue.rb", 128, "block in wait_poll"),
                gem(AR, "active_record/connection_adapters/abstract/connection_pool.rb", 366, "checkout"),
                app("app/controllers/categories_controller.rb", "Category.find_by!(slug:", "show"),
                *CONTROLLER_STACK,
            ], span_hours=0.5),
        web("ActionController::MissingExactTemplate", "Controller/products/show",
            "ProductsController#show is missing a template for request formats: application/xml", 57,
            "/products/{slug}", CONTROLLER_STACK[:1] + [
                gem(AP, "action_controller/metal/implicit_render.rb", 43, "default_render"),
            ] + CONTROLLER_STACK[1:], http_status=406),
        web("ActiveStorage::FileNotFoundError", "Controller/active_storage/representations/proxy/show",
            "ActiveStorage::FileNotFoundError", 15, "/rails/active_storage/representations/proxy/{id}", [
                "/usr/local/bundle/gems/activestorage-7.1.3/lib/active_storage/service/s3_service.rb:157:in `rescue in stream'",
                "/usr/local/bundle/gems/activestorage-7.1.3/app/controllers/concerns/active_storage/streaming.rb:64:in `send_blob_stream'",
                *CONTROLLER_STACK,
            ], http_status=404),
        job("CSV::MalformedCSVError", "ImportJob", "Unclosed quoted field in line 214.", 3, [
            f"{RUBY_LIB}/csv/parser.rb:1205:in `parse_quoted_column_value'",
            f"{RUBY_LIB}/csv.rb:2608:in `parse'",
            app("lib/csv_importer.rb", "csv = CSV.parse(", "rows"),
            app("lib/csv_importer.rb", "rows.each.with_index(2)", "call"),
            app("app/jobs/import_job.rb", "CsvImporter.new(file, currency: currency).call", "block in perform"),
            "/usr/local/bundle/gems/activestorage-7.1.3/app/models/active_storage/blob.rb:299:in `open'",
            app("app/jobs/import_job.rb", "result = blob.open", "perform"),
        ], span_hours=2.0),
        job("CSV::InvalidEncodingError", "ImportJob", "Invalid byte sequence in UTF-8 in line 37.", 1, [
            f"{RUBY_LIB}/csv/parser.rb:1080:in `parse_no_quote'",
            f"{RUBY_LIB}/csv.rb:2608:in `parse'",
            app("lib/csv_importer.rb", "csv = CSV.parse(", "rows"),
            app("lib/csv_importer.rb", "rows.each.with_index(2)", "call"),
            app("app/jobs/import_job.rb", "CsvImporter.new(file, currency: currency).call", "block in perform"),
            app("app/jobs/import_job.rb", "result = blob.open", "perform"),
        ], span_hours=0.0),
        job("Net::SMTPServerBusy", "ImportJob", "454 4.7.0 Temporary authentication failure", 2, [
            f"{RUBY_LIB}/net/smtp.rb:1085:in `check_response'",
            "/usr/local/bundle/gems/mail-2.8.1/lib/mail/network/delivery_methods/smtp.rb:109:in `start_smtp_session'",
            "/usr/local/bundle/gems/actionmailer-7.1.3/lib/action_mailer/message_delivery.rb:114:in `deliver_now'",
            app("app/jobs/import_job.rb", "import_finished.deliver_now", "perform"),
        ], span_hours=0.1),
        job("ActiveRecord::Deadlocked", "SyncInventoryJob",
            "PG::TRDeadlockDetected: ERROR:  deadlock detected\nDETAIL:  Process 48211 waits for ShareLock on "
            "transaction 99812344; blocked by process 48190.", 4, [
                *PG_QUERY,
                gem(AR, "active_record/persistence.rb", 1046, "update_columns"),
                app("app/jobs/sync_inventory_job.rb", "product.update_columns(", "block (2 levels) in perform"),
                app("app/jobs/sync_inventory_job.rb", "products.each do |product|", "each"),
                app("app/jobs/sync_inventory_job.rb", "products.each do |product|", "block in perform"),
                app("app/jobs/sync_inventory_job.rb", "find_in_batches(batch_size: BATCH_SIZE)", "perform"),
            ], span_hours=12.0),
        job("OpenSSL::SSL::SSLError", "SyncInventoryJob",
            "SSL_connect returned=1 errno=0 peeraddr=10.40.7.21:443 state=error: certificate verify failed "
            "(certificate has expired)", 2, [
                stdlib("net/protocol.rb", 46, "connect_nonblock"),
                stdlib("net/http.rb", 1342, "connect"),
                stdlib("net/http.rb", 1580, "do_start"),
                stdlib("net/http.rb", 1569, "start"),
                stdlib("net/http.rb", 1029, "start"),
                app("app/services/inventory_client.rb", "Net::HTTP.start(", "perform"),
                app("app/jobs/sync_inventory_job.rb", "find_in_batches(batch_size: BATCH_SIZE)", "perform"),
            ], span_hours=0.2),
        Group("ActiveRecord::QueryCanceled", "OtherTransaction/Rake/orders:reconcile",
              "PG::QueryCanceled: ERROR:  canceling statement due to statement timeout", 1, [
                  *PG_QUERY,
                  gem(AR, "active_record/relation/batches.rb", 71, "find_each"),
                  app("lib/tasks/orders.rake", ".find_each do |order|", "block (2 levels) in <top (required)>"),
                  *RAKE_STACK,
              ], http_status=None, hosts=WORKER_HOSTS[:1], span_hours=0.0),
    ]


def all_groups() -> list[Group]:
    groups = [*planted_bugs(), secret_bearing(), *noise(), *ordinary()]
    return sorted(groups, key=lambda g: (-g.occurrences, g.error_class, g.transaction))
