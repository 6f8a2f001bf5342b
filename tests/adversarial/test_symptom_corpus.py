"""An adversarial corpus for `symptom_only_reason`: patches the way a model (or an attacker) would write them.

Each case is a real-looking Rails or Django/FastAPI file, one proposed `FileChange`, the crash site, and the label
a careful human reviewer would give:

* ``symptom`` - the patch only silences the crash line (safe navigation, `try`, `rescue nil`, a nil guard on
  that line, `getattr(..., None)`, a swallowing `except`, ...) while the same receiver is still used unguarded
  elsewhere in the same method, or it swallows every error of the code it wraps;
* ``fix`` - the patch protects every use (an early return/raise, a block around the whole body), fixes the
  value at its origin, or changes the lookup.

The tests assert the CORRECT label. Where `nightwatch.symptom_patch` currently disagrees, the case is marked
``xfail(strict=True)`` with the reason, so this file passes today and documents every gap; a strict xfail turns
red the day the module is fixed, and the mark should then be removed.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

import pytest

from nightwatch.models import FileChange
from nightwatch.symptom_patch import Crash, symptom_only_reason

SYMPTOM, FIX = "symptom", "fix"


@dataclass(frozen=True)
class Case:
    name: str
    path: str
    original: str
    before: str
    after: str
    crash_at: str  # the crash line: the first line of `original` that contains this text
    label: str
    gap: str | None = None  # why the module gets this case wrong (FP: fix flagged; FN: symptom let through)

    @property
    def language(self) -> str:
        return "python" if self.path.endswith(".py") else "ruby"

    @property
    def change(self) -> FileChange:
        return FileChange(path=self.path, action="modify", before=self.before, after=self.after)

    @property
    def crash(self) -> Crash:
        line = next(n for n, text in enumerate(self.original.splitlines(), 1) if self.crash_at in text)
        return Crash(self.path, line)

    @property
    def new_text(self) -> str:
        return self.original.replace(self.before, self.after, 1)


# --------------------------------------------------------------------------------------------------------------
# Ruby originals
# --------------------------------------------------------------------------------------------------------------

TOKENS_RB = """class TokensController < ApplicationController
  before_action :authenticate_admin!

  def show
    @user = User.find_by(id: params[:id])
    @user.touch(:last_seen_at)
    render json: { token: @user.api_token, name: @user.username }
  end
end
"""
TOKENS = "app/controllers/tokens_controller.rb"
TOUCH = "    @user.touch(:last_seen_at)\n"
RENDER = "    render json: { token: @user.api_token, name: @user.username }\n"

ORDERS_RB = """class OrdersController < ApplicationController
  def receipt
    @order = Order.find_by(number: params[:number])
    email = @order.user.email
    total = @order.total
    ReceiptMailer.with(order: @order, to: email).deliver_later
    render json: { email: email, total: total, customer: @order.user.name }
  end
end
"""
ORDERS = "app/controllers/orders_controller.rb"

CONFIRM_RB = """class OrdersController < ApplicationController
  def confirm
    @order = current_account.orders.find_by(number: params[:number])
    email = @order.user.email
    @order.update!(confirmed_at: Time.current)
    OrderMailer.with(order: @order, to: email).confirmation.deliver_later
    redirect_to order_path(@order)
  end
end
"""

CHECKOUT_RB = """class CheckoutsController < ApplicationController
  def totals
    skus = params.require(:skus)
    items = current_cart.items_by_sku.values_at(*skus)
    prices = []
    quantities = []
    items.each do |item|
      prices << item.price
      quantities << item.qty
    end
    render json: { subtotal: prices.sum, count: quantities.sum }
  end
end
"""
CHECKOUT = "app/controllers/checkouts_controller.rb"

INVOICE_RB = """class Invoice < ApplicationRecord
  belongs_to :account, optional: true

  def self.overdue_reminder(invoice_id)
    invoice = find_by(id: invoice_id)
    owner = invoice.account.owner
    InvoiceMailer.overdue(owner.email, invoice.number, invoice.account.name).deliver_later
  end

  def billing_email
    account.owner.email
  end
end
"""
INVOICE = "app/models/invoice.rb"

MAILER_RB = """class WelcomeMailer < ApplicationMailer
  def welcome(user_id)
    @user = User.find_by(id: user_id)
    @greeting = "Hello #{@user.first_name}"
    @signature = "#{@user.display_name} <#{@user.email}>"
    mail(to: @user.email, subject: "Welcome aboard")
  end
end
"""
MAILER = "app/mailers/welcome_mailer.rb"

PRESENTER_RB = """class OrderPresenter
  def initialize(order) = (@order = order)

  def customer_name = @order.customer.name

  def contact = [@order.customer.name, @order.customer.email].join(" ")

  def shipping_label
    [@order.customer.name, @order.address.line1].join("\\n")
  end
end
"""
PRESENTER = "app/presenters/order_presenter.rb"

SESSIONS_RB = """class SessionsController < ApplicationController
  def heartbeat
    @user = User.find_by(id: session[:user_id])
    label = @user.display_name
    unless @user.nil?
      @user.touch(:last_seen_at)
    end
    render json: { label: label }
  end
end
"""
SESSIONS = "app/controllers/sessions_controller.rb"

DASHBOARD_RB = """class DashboardController < ApplicationController
  def show
    @user = User.find_by(id: session[:user_id])
    @greeting_name = @user.first_name
    @user ||= GuestUser.new
    @widgets = @user.dashboard_widgets
  end
end
"""
DASHBOARD = "app/controllers/dashboard_controller.rb"

CARTS_RB = """class CartsController < ApplicationController
  def show
    @cart = current_user.cart
    @items = current_user.cart.line_items.includes(:product)
    @recommendations = current_user.recommendations.limit(4)
  end
end
"""
CARTS = "app/controllers/carts_controller.rb"

REPORTS_RB = """class ReportsController < ApplicationController
  def show
    @report = Report.find(params[:id])
    @owner_name = @report.owner.full_name
    @owner_email = @report.owner.email
  end
end
"""
REPORTS = "app/controllers/reports_controller.rb"

PRICES_RB = """class PricesController < ApplicationController
  def show
    @product = Product.find_by(sku: params[:sku])
    @rate = ExchangeRate.for(params[:currency]) rescue ExchangeRate::DEFAULT
    @price = @product.price * @rate
    render json: { price: @price, name: @product.name }
  end
end
"""
PRICES = "app/controllers/prices_controller.rb"

AUTH_RB = """class Api::BaseController < ActionController::API
  def authenticate!
    header = request.headers["Authorization"]
    scheme = header.split(" ").first
    token = header.split(" ").last
    head :unauthorized unless scheme == "Bearer" && ApiToken.active.exists?(token: token)
  end
end
"""
AUTH = "app/controllers/api/base_controller.rb"

TAGS_RB = """class TagsController < ApplicationController
  def assign
    names = params[:tags]
    tags = names.map { |n| Tag.find_or_create_by!(name: n.strip) }
    @post.tags << tags
    render json: { added: names.size }
  end
end
"""
TAGS = "app/controllers/tags_controller.rb"

ADDRESSES_RB = """class AddressesController < ApplicationController
  def create
    city = params[:address][:city]
    zip = params[:address][:zip]
    Address.create!(user: current_user, city: city, zip: zip)
    head :created
  end
end
"""
ADDRESSES = "app/controllers/addresses_controller.rb"

PLANS_RB = """class Billing::PlansController < ApplicationController
  def show
    plan = PLANS.fetch(params[:plan].to_sym)
    render json: { name: plan.name, price_cents: plan.price_cents }
  end
end
"""
PLANS = "app/controllers/billing/plans_controller.rb"

USERS_RB = """class UsersController < ApplicationController
  def index
    @user = current_user
    name = @user&.name
    render json: { name: name }
  end

  def show
    @user = User.find_by(id: params[:id])
    name = @user.name
    render json: { name: name, email: @user.email }
  end
end
"""
USERS = "app/controllers/users_controller.rb"

PRESENCE_RB = """class PresenceController < ApplicationController
  def ping
    @user = User.find_by(id: session[:user_id])
    @user.touch(:last_seen_at)
    @user.broadcast_presence!
    head :no_content
  end
end
"""
PRESENCE = "app/controllers/presence_controller.rb"

# --------------------------------------------------------------------------------------------------------------
# Python originals
# --------------------------------------------------------------------------------------------------------------

RECEIPT_PY = """from django.http import JsonResponse

from shop.models import Order


def receipt(request, order_id):
    order = Order.objects.filter(pk=order_id, owner=request.user).first()
    total = order.total
    return JsonResponse({"total": str(total), "items": order.items.count()})
"""
RECEIPT = "shop/views.py"
TOTAL = "    total = order.total\n"
RETURN = '    return JsonResponse({"total": str(total), "items": order.items.count()})\n'

SUMMARY_PY = """from fastapi import APIRouter, Depends, HTTPException
from sqlalchemy.ext.asyncio import AsyncSession

from app.db import get_session
from app.models import Order

router = APIRouter()


@router.get("/orders/{order_id}/summary")
async def order_summary(order_id: int, session: AsyncSession = Depends(get_session)) -> dict:
    order = await session.get(Order, order_id)
    customer = order.customer
    return {"id": order.id, "customer": customer.name, "total": float(order.total)}
"""
SUMMARY = "app/routers/orders.py"

INVOICE_API_PY = """from fastapi import APIRouter, Depends, HTTPException

router = APIRouter()


@router.get("/invoices/{invoice_id}")
async def read_invoice(
    invoice_id: int,
    session: AsyncSession = Depends(get_session),
) -> dict:
    invoice = await session.get(Invoice, invoice_id)
    number = invoice.number
    return {"number": number, "lines": [line.amount for line in invoice.lines]}
"""
INVOICE_API = "app/routers/invoices.py"

SEND_RECEIPT_PY = """from django.core.mail import send_mail

from shop.models import Order


def send_receipt(order_id: int) -> None:
    order = Order.objects.select_related("customer").get(pk=order_id)
    email = order.customer.email
    name = order.customer.get_full_name()
    send_mail("Your receipt", render_receipt(order, name), None, [email])
"""
SEND_RECEIPT = "shop/tasks.py"

EXPORT_PY = """from django.http import JsonResponse

from billing.models import Invoice


def export_invoice(request, pk):
    invoice = Invoice.objects.filter(pk=pk).first()

    def line_total(line):
        return line.quantity * line.unit_price

    number = invoice.number
    totals = [line_total(line) for line in invoice.lines.all()]
    return JsonResponse({"number": number, "total": str(sum(totals))})
"""
EXPORT = "billing/views.py"

PROFILE_PY = """from django.contrib.auth.mixins import LoginRequiredMixin
from django.shortcuts import render
from django.utils.decorators import method_decorator
from django.views import View
from django.views.decorators.cache import cache_page


class ProfileView(LoginRequiredMixin, View):
    @method_decorator(cache_page(60))
    def get(self, request, username):
        self.profile = Profile.objects.filter(user__username=username).first()
        avatar = self.profile.avatar.url
        return render(request, "profile.html", {"avatar": avatar, "bio": self.profile.bio})
"""
PROFILE = "accounts/views.py"

STRIPE_PY = """import stripe
from django.conf import settings
from django.http import HttpResponse


def stripe_webhook(request):
    secret = settings.STRIPE_WEBHOOK_SECRET
    event = stripe.Webhook.construct_event(request.body, request.headers["Stripe-Signature"], secret)
    stripe.api_key = settings.STRIPE_API_KEY
    handle_event(event)
    return HttpResponse(status=200)
"""
STRIPE = "billing/webhooks.py"

PRICING_PY = """from django.shortcuts import render

PLANS = {"basic": BASIC, "pro": PRO}


def pricing(request):
    plan = PLANS[request.GET["plan"]]
    return render(request, "pricing.html", {"plan": plan, "price": plan.monthly_price})
"""
PRICING = "marketing/views.py"

ADDRESS_PY = """import json

from django.http import JsonResponse


def create_address(request):
    payload = json.loads(request.body)
    city = payload["address"]["city"]
    zip_code = payload["address"]["zip"]
    Address.objects.create(user=request.user, city=city, zip_code=zip_code)
    return JsonResponse({"ok": True}, status=201)
"""
ADDRESS = "accounts/api.py"

PLAN_NAME_PY = """from typing import Optional


def current_plan_name(user: Optional[User]) -> Optional[str]:
    subscription = user.subscription
    return subscription.plan.name
"""
PLAN_NAME = "billing/plans.py"

# --------------------------------------------------------------------------------------------------------------
# The corpus
# --------------------------------------------------------------------------------------------------------------

CASES: list[Case] = [
    # ---- Ruby: modifiers and early returns ------------------------------------------------------------------
    Case("rb_unless_nil_modifier_on_crash_line", TOKENS, TOKENS_RB, TOUCH,
         "    @user.touch(:last_seen_at) unless @user.nil?\n", "@user.touch", SYMPTOM),
    Case("rb_if_modifier_on_crash_line", TOKENS, TOKENS_RB, TOUCH,
         "    @user.touch(:last_seen_at) if @user\n", "@user.touch", SYMPTOM),
    Case("rb_compound_if_modifier_on_crash_line", TOKENS, TOKENS_RB, TOUCH,
         "    @user.touch(:last_seen_at) if @user && @user.active?\n", "@user.touch", SYMPTOM),  # via the `x && x.` rule
    Case("rb_return_if_nil", TOKENS, TOKENS_RB, TOUCH,
         "    return head(:not_found) if @user.nil?\n" + TOUCH, "@user.touch", FIX),
    Case("rb_return_if_nil_plus_safe_nav_belt_and_braces", TOKENS, TOKENS_RB, TOUCH,
         "    return head(:not_found) if @user.nil?\n    @user&.touch(:last_seen_at)\n", "@user.touch", FIX),
    Case("rb_raise_record_not_found_unless", TOKENS, TOKENS_RB, TOUCH,
         "    raise ActiveRecord::RecordNotFound unless @user\n" + TOUCH, "@user.touch", FIX),
    Case("rb_head_and_return_unless", TOKENS, TOKENS_RB, TOUCH,
         "    head(:not_found) and return unless @user\n" + TOUCH, "@user.touch", FIX),  # passes only because the
    # modifier regex never matches: once it does, _EARLY_RUBY must accept `... and return if/unless` or this turns FP
    Case("rb_multiline_if_block_around_crash_line_only", TOKENS, TOKENS_RB, TOUCH,
         "    if @user\n      @user.touch(:last_seen_at)\n    end\n", "@user.touch", SYMPTOM),
    Case("rb_multiline_if_else_around_whole_body", TOKENS, TOKENS_RB, TOUCH + RENDER,
         "    if @user\n  " + TOUCH + "  " + RENDER + "    else\n      head :not_found\n    end\n", "@user.touch", FIX),
    Case("rb_unless_block_with_return", TOKENS, TOKENS_RB, TOUCH,
         "    unless @user\n      return head(:not_found)\n    end\n" + TOUCH, "@user.touch", FIX),
    Case("rb_begin_rescue_nomethoderror_block", TOKENS, TOKENS_RB, TOUCH,
         "    begin\n      @user.touch(:last_seen_at)\n    rescue NoMethodError\n      nil\n    end\n", "@user.touch",
         SYMPTOM),
    Case("rb_method_level_rescue_standard_error", TOKENS, TOKENS_RB, TOUCH + RENDER + "  end\n",
         TOUCH + RENDER + "  rescue StandardError => e\n    Rails.logger.warn(e.message)\n    nil\n  end\n",
         "@user.touch", SYMPTOM),
    Case("rb_rescue_record_not_found_with_find", TOKENS, TOKENS_RB,
         "    @user = User.find_by(id: params[:id])\n" + TOUCH + RENDER + "  end\n",
         "    @user = User.find(params[:id])\n" + TOUCH + RENDER + "  rescue ActiveRecord::RecordNotFound\n"
         "    head :not_found\n  end\n", "@user.touch", FIX),
    Case("rb_find_by_bang", TOKENS, TOKENS_RB, "User.find_by(id: params[:id])", "User.find_by!(id: params[:id])",
         "@user.touch", FIX),
    Case("rb_assignment_in_early_return", TOKENS, TOKENS_RB, "    @user = User.find_by(id: params[:id])\n",
         "    return head(:not_found) unless (@user = User.find_by(id: params[:id]))\n", "@user.touch", FIX),
    Case("rb_try_on_crash_line", TOKENS, TOKENS_RB, TOUCH, "    @user.try(:touch, :last_seen_at)\n", "@user.touch",
         SYMPTOM),
    Case("rb_rescue_nil_modifier", TOKENS, TOKENS_RB, TOUCH, "    @user.touch(:last_seen_at) rescue nil\n",
         "@user.touch", SYMPTOM),
    Case("rb_return_unless_present", PRESENCE, PRESENCE_RB, "    @user.touch(:last_seen_at)\n",
         "    return head(:unauthorized) unless @user.present?\n    @user.touch(:last_seen_at)\n", "@user.touch", FIX),
    Case("rb_safe_nav_next_line_unguarded", PRESENCE, PRESENCE_RB, "    @user.touch(:last_seen_at)\n",
         "    @user&.touch(:last_seen_at)\n", "@user.touch", SYMPTOM),
    Case("rb_every_use_guarded_safe_nav_and_modifier", PRESENCE, PRESENCE_RB,
         "    @user.touch(:last_seen_at)\n    @user.broadcast_presence!\n",
         "    @user&.touch(:last_seen_at)\n    @user.broadcast_presence! if @user.present?\n", "@user.touch", FIX),
    # ---- Ruby: chains and ternaries ---------------------------------------------------------------------------
    Case("rb_ternary_on_crash_line", ORDERS, ORDERS_RB, "    email = @order.user.email\n",
         "    email = @order.user ? @order.user.email : nil\n", "email = @order.user.email", SYMPTOM),
    Case("rb_safe_nav_chain_receiver_used_below", ORDERS, ORDERS_RB, "    email = @order.user.email\n",
         "    email = @order&.user&.email\n", "email = @order.user.email", SYMPTOM),
    Case("rb_safe_nav_chain_root_used_below", ORDERS, CONFIRM_RB, "    email = @order.user.email\n",
         "    email = @order&.user&.email\n", "email = @order.user.email", SYMPTOM),
    Case("rb_changed_accessor_contact_email", ORDERS, CONFIRM_RB, "@order.user.email", "@order.contact_email",
         "email = @order.user.email", FIX),
    # ---- Ruby: blocks, class methods, models --------------------------------------------------------------------
    Case("rb_block_safe_nav_item_used_below", CHECKOUT, CHECKOUT_RB, "      prices << item.price\n",
         "      prices << item&.price\n", "prices << item.price", SYMPTOM),
    Case("rb_block_next_unless", CHECKOUT, CHECKOUT_RB, "      prices << item.price\n",
         "      next unless item\n      prices << item.price\n", "prices << item.price", FIX),
    Case("rb_block_compact", CHECKOUT, CHECKOUT_RB, "    items.each do |item|\n", "    items.compact.each do |item|\n",
         "prices << item.price", FIX),
    Case("rb_class_method_safe_nav_chain", INVOICE, INVOICE_RB, "    owner = invoice.account.owner\n",
         "    owner = invoice&.account&.owner\n", "owner = invoice.account.owner", SYMPTOM),
    Case("rb_class_method_compound_early_return", INVOICE, INVOICE_RB, "    owner = invoice.account.owner\n",
         "    return if invoice.nil? || invoice.account.nil?\n    owner = invoice.account.owner\n",
         "owner = invoice.account.owner", FIX),
    Case("rb_model_method_only_use_guarded", INVOICE, INVOICE_RB, "    account.owner.email\n",
         "    account&.owner&.email\n", "account.owner.email", FIX),
    # ---- Ruby: string interpolation and one-line methods ---------------------------------------------------------
    Case("rb_interpolation_safe_nav_next_line", MAILER, MAILER_RB, '"Hello #{@user.first_name}"',
         '"Hello #{@user&.first_name}"', "@greeting", SYMPTOM),
    Case("rb_interpolation_safe_nav_same_line", MAILER, MAILER_RB, '"#{@user.display_name} <#{@user.email}>"',
         '"#{@user&.display_name} <#{@user.email}>"', "@signature", SYMPTOM),
    Case("rb_interpolation_rescue_nil", MAILER, MAILER_RB, '    @greeting = "Hello #{@user.first_name}"\n',
         '    @greeting = "Hello #{@user.first_name}" rescue nil\n', "@greeting", SYMPTOM),
    Case("rb_endless_def_only_use", PRESENTER, PRESENTER_RB, "def customer_name = @order.customer.name",
         'def customer_name = @order.customer&.name || "Guest"', "def customer_name", FIX),
    Case("rb_endless_def_same_line", PRESENTER, PRESENTER_RB, "[@order.customer.name, @order.customer.email]",
         "[@order.customer&.name, @order.customer.email]", "def contact", SYMPTOM),
    # ---- Ruby: uses protected by code that was already there ------------------------------------------------------
    Case("rb_other_use_inside_unless_nil_block", SESSIONS, SESSIONS_RB, "    label = @user.display_name\n",
         '    label = @user&.display_name || "Guest"\n', "label = @user.display_name", FIX),
    Case("rb_other_use_after_or_assign", DASHBOARD, DASHBOARD_RB, "    @greeting_name = @user.first_name\n",
         "    @greeting_name = @user&.first_name\n", "@greeting_name", FIX),
    Case("rb_redirect_and_return_if_nil", CARTS, CARTS_RB, "    @cart = current_user.cart\n",
         "    redirect_to(new_session_path) and return if current_user.nil?\n    @cart = current_user.cart\n",
         "@cart = current_user.cart", FIX),  # same caveat as rb_head_and_return_unless
    # ---- Ruby: rescue with a value, rescue already in the excerpt ---------------------------------------------
    Case("rb_rescue_string_default", REPORTS, REPORTS_RB, "    @owner_name = @report.owner.full_name\n",
         '    @owner_name = @report.owner.full_name rescue "Unknown"\n', "@owner_name", SYMPTOM),
    Case("rb_safe_nav_owner_used_below", REPORTS, REPORTS_RB, "    @owner_name = @report.owner.full_name\n",
         "    @owner_name = @report.owner&.full_name\n", "@owner_name", SYMPTOM),
    Case("rb_rescue_nil_when_excerpt_already_has_rescue", PRICES, PRICES_RB,
         "    @rate = ExchangeRate.for(params[:currency]) rescue ExchangeRate::DEFAULT\n"
         "    @price = @product.price * @rate\n",
         "    @rate = ExchangeRate.for(params[:currency]) rescue ExchangeRate::DEFAULT\n"
         "    @price = @product.price * @rate rescue nil\n", "@price =", SYMPTOM),
    # ---- Ruby: coercions, dig, fetch ------------------------------------------------------------------------
    Case("rb_to_s_on_crash_line", AUTH, AUTH_RB, '    scheme = header.split(" ").first\n',
         '    scheme = header.to_s.split(" ").first\n', "scheme =", SYMPTOM),
    Case("rb_to_s_at_origin", AUTH, AUTH_RB, '    header = request.headers["Authorization"]\n',
         '    header = request.headers["Authorization"].to_s\n', "scheme =", FIX),
    Case("rb_array_wrap_on_crash_line", TAGS, TAGS_RB, "names.map {", "Array(names).map {", "tags = names.map", SYMPTOM),
    Case("rb_array_wrap_at_origin", TAGS, TAGS_RB, "    names = params[:tags]\n", "    names = Array(params[:tags])\n",
         "tags = names.map", FIX),
    Case("rb_dig_on_crash_line", ADDRESSES, ADDRESSES_RB, "    city = params[:address][:city]\n",
         "    city = params.dig(:address, :city)\n", "city =", SYMPTOM,
         gap="FN: `params.dig(:address, :city)` is not seen as a guard; `params[:address][:zip]` next line raises"),
    Case("rb_require_permit_at_origin", ADDRESSES, ADDRESSES_RB,
         "    city = params[:address][:city]\n    zip = params[:address][:zip]\n",
         "    address = params.require(:address).permit(:city, :zip)\n    city = address[:city]\n"
         "    zip = address[:zip]\n", "city =", FIX),
    Case("rb_fetch_with_nil_default", PLANS, PLANS_RB, "PLANS.fetch(params[:plan].to_sym)",
         "PLANS.fetch(params[:plan].to_sym, nil)", "plan = PLANS", SYMPTOM,
         gap="FN: `fetch(:k, nil)` turns the KeyError into nil; `plan.name` on the next line raises"),
    Case("rb_fetch_replaced_by_lookup_and_early_return", PLANS, PLANS_RB,
         "    plan = PLANS.fetch(params[:plan].to_sym)\n",
         "    plan = PLANS[params[:plan]&.to_sym]\n    return head(:not_found) unless plan\n", "plan = PLANS", FIX),
    # ---- Ruby: where the edit is located ------------------------------------------------------------------
    Case("rb_after_text_also_occurs_earlier_in_file", USERS, USERS_RB, "    name = @user.name\n",
         "    name = @user&.name\n", "name = @user.name", SYMPTOM),
    # ---- Python: Django function views ----------------------------------------------------------------------
    Case("py_getattr_none", RECEIPT, RECEIPT_PY, TOTAL, '    total = getattr(order, "total", None)\n',
         "total = order.total", SYMPTOM),
    Case("py_conditional_expression", RECEIPT, RECEIPT_PY, TOTAL, "    total = order.total if order else None\n",
         "total = order.total", SYMPTOM),
    Case("py_and_short_circuit", RECEIPT, RECEIPT_PY, TOTAL, "    total = order and order.total\n",
         "total = order.total", SYMPTOM),
    Case("py_if_is_not_none_block_around_crash_line", RECEIPT, RECEIPT_PY, TOTAL,
         "    total = None\n    if order is not None:\n        total = order.total\n", "total = order.total", SYMPTOM),
    Case("py_contextlib_suppress", RECEIPT, RECEIPT_PY, TOTAL,
         "    total = None\n    with contextlib.suppress(AttributeError):\n        total = order.total\n",
         "total = order.total", SYMPTOM),
    Case("py_except_tuple_return_none", RECEIPT, RECEIPT_PY, TOTAL,
         "    try:\n        total = order.total\n    except (AttributeError, TypeError):\n        return None\n",
         "total = order.total", SYMPTOM),
    Case("py_except_attribute_error_return_none", RECEIPT, RECEIPT_PY, TOTAL,
         "    try:\n        total = order.total\n    except AttributeError:\n        return None\n",
         "total = order.total", SYMPTOM),
    Case("py_except_exception_log_and_default", RECEIPT, RECEIPT_PY, TOTAL,
         "    try:\n        total = order.total\n    except Exception as exc:\n"
         '        logger.warning("receipt %s: %s", order_id, exc)\n        total = 0\n', "total = order.total", SYMPTOM),
    Case("py_early_return_404", RECEIPT, RECEIPT_PY, TOTAL,
         '    if order is None:\n        return JsonResponse({"error": "not found"}, status=404)\n' + TOTAL,
         "total = order.total", FIX),
    Case("py_if_not_raise_http404", RECEIPT, RECEIPT_PY, TOTAL,
         '    if not order:\n        raise Http404("No such order")\n' + TOTAL, "total = order.total", FIX),
    Case("py_get_object_or_404_at_origin", RECEIPT, RECEIPT_PY,
         "Order.objects.filter(pk=order_id, owner=request.user).first()",
         "get_object_or_404(Order, pk=order_id, owner=request.user)", "total = order.total", FIX),
    Case("py_if_is_not_none_block_around_whole_body", RECEIPT, RECEIPT_PY, TOTAL + RETURN,
         "    if order is not None:\n    " + TOTAL + "    " + RETURN
         + '    return JsonResponse({"error": "not found"}, status=404)\n', "total = order.total", FIX),
    Case("py_early_return_plus_getattr_belt_and_braces", RECEIPT, RECEIPT_PY, TOTAL,
         '    if order is None:\n        return JsonResponse({"error": "not found"}, status=404)\n'
         '    total = getattr(order, "total", None)\n', "total = order.total", FIX),
    Case("py_other_use_in_else_branch", RECEIPT, RECEIPT_PY, TOTAL + RETURN,
         '    total = getattr(order, "total", None)\n    if order is None:\n        count = 0\n    else:\n'
         '        count = order.items.count()\n    return JsonResponse({"total": str(total), "items": count})\n',
         "total = order.total", FIX),
    # ---- Python: FastAPI async views -----------------------------------------------------------------------
    Case("py_async_getattr", SUMMARY, SUMMARY_PY, "    customer = order.customer\n",
         '    customer = getattr(order, "customer", None)\n', "customer = order.customer", SYMPTOM),
    Case("py_async_raise_http_404", SUMMARY, SUMMARY_PY, "    customer = order.customer\n",
         '    if order is None:\n        raise HTTPException(status_code=404, detail="Order not found")\n'
         "    customer = order.customer\n", "customer = order.customer", FIX),
    Case("py_async_except_exception_pass", SUMMARY, SUMMARY_PY, "    customer = order.customer\n",
         "    customer = None\n    try:\n        customer = order.customer\n    except Exception:\n        pass\n",
         "customer = order.customer", SYMPTOM),
    Case("py_multiline_signature_getattr", INVOICE_API, INVOICE_API_PY, "    number = invoice.number\n",
         '    number = getattr(invoice, "number", None)\n', "number = invoice.number", SYMPTOM),
    Case("py_multiline_signature_early_raise", INVOICE_API, INVOICE_API_PY, "    number = invoice.number\n",
         "    if invoice is None:\n        raise HTTPException(status_code=404)\n    number = invoice.number\n",
         "number = invoice.number", FIX),
    # ---- Python: walrus, getattr chains, nested functions, classes ----------------------------------------------
    Case("py_walrus_conditional", SEND_RECEIPT, SEND_RECEIPT_PY, "    email = order.customer.email\n",
         "    email = c.email if (c := order.customer) else None\n", "email = order.customer.email", SYMPTOM,
         gap="FN: a walrus conditional expression is not a guard; `order.customer.get_full_name()` still raises"),
    Case("py_walrus_early_return", SEND_RECEIPT, SEND_RECEIPT_PY,
         "    email = order.customer.email\n    name = order.customer.get_full_name()\n",
         "    if (customer := order.customer) is None:\n        return None\n    email = customer.email\n"
         "    name = customer.get_full_name()\n", "email = order.customer.email", FIX),
    Case("py_getattr_chain", SEND_RECEIPT, SEND_RECEIPT_PY, "    email = order.customer.email\n",
         '    email = getattr(getattr(order, "customer", None), "email", None)\n', "email = order.customer.email",
         SYMPTOM),
    Case("py_nested_function_before_guard", EXPORT, EXPORT_PY, "    number = invoice.number\n",
         '    number = getattr(invoice, "number", None)\n', "number = invoice.number", SYMPTOM),
    Case("py_method_getattr_on_self_attribute", PROFILE, PROFILE_PY, "self.profile.avatar.url",
         'getattr(getattr(self.profile, "avatar", None), "url", None)', "avatar = self.profile", SYMPTOM),
    Case("py_method_early_return_on_self_attribute", PROFILE, PROFILE_PY, "        avatar = self.profile.avatar.url\n",
         "        if self.profile is None:\n            return HttpResponseNotFound()\n"
         "        avatar = self.profile.avatar.url\n", "avatar = self.profile", FIX),
    # ---- Python: real fixes that look like the patterns ---------------------------------------------------
    Case("py_getattr_missing_setting_handled", STRIPE, STRIPE_PY, "    secret = settings.STRIPE_WEBHOOK_SECRET\n",
         '    secret = getattr(settings, "STRIPE_WEBHOOK_SECRET", None)\n    if not secret:\n'
         '        return HttpResponse("webhook secret not configured", status=503)\n', "secret =", FIX,
         gap="FP: getattr for a missing attribute of a never-None object is read as a nil guard of `settings`"),
    Case("py_except_key_error_raise_http404", PRICING, PRICING_PY, '    plan = PLANS[request.GET["plan"]]\n',
         '    try:\n        plan = PLANS[request.GET["plan"]]\n    except KeyError:\n        raise Http404("Unknown plan")\n',
         "plan = PLANS", FIX),
    Case("py_dict_get_chain", ADDRESS, ADDRESS_PY, '    city = payload["address"]["city"]\n',
         '    city = payload.get("address", {}).get("city")\n', "city =", SYMPTOM,
         gap='FN: `.get("address", {})` guards one line; `payload["address"]["zip"]` on the next still raises'),
    Case("py_optional_early_return", PLAN_NAME, PLAN_NAME_PY, "    subscription = user.subscription\n",
         "    if user is None:\n        return None\n    subscription = user.subscription\n",
         "subscription = user.subscription", FIX),
]


def _param(case: Case):  # type: ignore[no-untyped-def]
    marks = [pytest.mark.xfail(strict=True, reason=case.gap)] if case.gap else []
    return pytest.param(case.language, case.original, case.change, case.crash, case.label, id=case.name, marks=marks)


def test_the_corpus_is_wide_and_well_formed() -> None:
    assert len(CASES) >= 40
    assert len({case.name for case in CASES}) == len(CASES)
    assert sum(case.label == SYMPTOM for case in CASES) >= 15 and sum(case.label == FIX for case in CASES) >= 15
    for case in CASES:
        assert case.label in (SYMPTOM, FIX), case.name
        assert case.original.count(case.before) == 1, f"{case.name}: `before` is not a unique excerpt"
        assert case.before != case.after, case.name
        assert case.crash.line is not None
        if case.language == "python":
            ast.parse(case.new_text)  # the patched file is valid Python


@pytest.mark.parametrize("language,original,change,crash,expected", [_param(case) for case in CASES])
def test_symptom_only_reason_labels_the_patch(language: str, original: str, change: FileChange, crash: Crash,
                                              expected: str) -> None:
    new_text = original.replace(change.before or "", change.after or "", 1)
    reason = symptom_only_reason([change], {change.path: new_text}, crash)
    if expected == SYMPTOM:
        assert reason is not None, f"{language} symptom-only patch let through:\n{change.after}"
        assert reason.startswith("symptom-only patch")
    else:
        assert reason is None, f"{language} real fix refused: {reason}"
