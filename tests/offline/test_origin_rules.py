"""The offline model's rules from the crash site to the origin, on real-shaped Rails code."""

from __future__ import annotations

from nightwatch.offline.origin_rules import Site, assignment_query, callbacks, find_origin, nil_receiver

STORIES = """class StoriesController < ApplicationController
  before_action :require_logged_in_user_or_400,
                :only => [:upvote, :downvote]
  before_action :require_logged_in_user, only: %i[create edit]
  before_action :find_story, except: [:index, :new]
  after_action :mark_read, only: [:show, :update]

  def check_url_dupe
    render json: story_params
  end

  def story_params
    if @user.is_moderator?
      params
    end
  end

  def show
    story = Story.where(short_id: params[:id]).first
    render plain: story.title
  end

  private

  def mark_read
    @story.touch_all
  end
end
"""
APP = """class MastodonApp
  def revoke_token(token)
    res = Sponge.new.fetch(url)
    JSON.parse(res.body)
  rescue OpenSSL::SSL::SSLError
    errors.add :base, "no ssl"
  rescue NoIPsError
    errors.add :base, "no ip"
  end
end
"""


def numbered(text: str) -> dict[int, str]:
    return dict(enumerate(text.splitlines(), 1))


def test_nil_receivers_include_predicate_methods_and_chains() -> None:
    assert nil_receiver("undefined method `is_moderator?' for nil:NilClass", "    if @user.is_moderator?") == "@user"
    assert nil_receiver("undefined method 'title' for nil", "x = @story.comments.first.title") == "@story.comments.first"
    assert nil_receiver("'NoneType' object has no attribute 'total'", "return order.total") == "order"
    assert nil_receiver("divided by 0", "a / b") is None
    assert assignment_query("@user") == "@user =" and assignment_query("@story.user") is None and assignment_query("x") is None


def test_callback_declarations_span_lines_and_both_option_syntaxes() -> None:
    found = {c.names[0]: c for c in callbacks(numbered(STORIES))}
    assert found["require_logged_in_user_or_400"].line == 2
    assert found["require_logged_in_user_or_400"].options == ":only => [:upvote, :downvote]"
    assert found["require_logged_in_user"].options == "only: %i[create edit]"
    assert found["mark_read"].kind == "after"


def test_a_callback_named_after_the_nil_receiver_that_skips_the_action_is_the_origin() -> None:
    origin = find_origin(message="undefined method `is_moderator?' for nil:NilClass", transaction="Controller/stories/check_url_dupe",
                         crash=Site(("app/controllers/stories_controller.rb", 13, "story_params"), numbered(STORIES)))
    assert origin is not None and origin.line == 2 and "does not run for `check_url_dupe`" in origin.note


def test_a_crash_inside_a_callback_points_at_its_declaration() -> None:
    origin = find_origin(message="undefined method `touch_all' for nil", transaction="Controller/stories/update",
                         crash=Site(("app/controllers/stories_controller.rb", 26, "StoriesController#mark_read"), numbered(STORIES)))
    assert origin is not None and origin.line == 6 and "after_action `mark_read`" in origin.note


def test_a_local_assigned_from_a_lookup_that_can_return_nil() -> None:
    origin = find_origin(message="undefined method `title' for nil", transaction="Controller/stories/show",
                         crash=Site(("app/controllers/stories_controller.rb", 20, "show"), numbered(STORIES)))
    assert origin is not None and origin.line == 19


def test_an_application_raise_points_at_the_callers_rescues() -> None:
    sponge = numbered("class Sponge\n  def fetch(url)\n    raise DNSError.new(\"couldn't resolve\")\n  end\nend\n")
    origin = find_origin(error_class="DNSError", message="couldn't resolve", transaction="Controller/settings/disconnect",
                         crash=Site(("extras/sponge.rb", 3, "Sponge#fetch"), sponge),
                         caller=Site(("app/models/mastodon_app.rb", 3, "MastodonApp#revoke_token"), numbered(APP)))
    assert origin is not None and (origin.file, origin.line) == ("app/models/mastodon_app.rb", 7)
    assert "not DNSError" in origin.note


def test_a_library_error_about_its_input_points_at_the_caller_and_plain_crashes_stay_put() -> None:
    gateway = numbered("class PaymentGateway\n  def refund(amount)\n    Stripe::Refund.create(amount: amount)\n  end\nend\n")
    kwargs = dict(message="Amount must be no more than 10", transaction="Controller/orders/refund",
                  crash=Site(("app/services/payment_gateway.rb", 3, "refund"), gateway),
                  caller=Site(("app/controllers/orders_controller.rb", 49, "refund")))
    origin = find_origin(error_class="Stripe::InvalidRequestError", raised_in_library=True, **kwargs)
    assert origin is not None and origin.line == 49
    assert find_origin(error_class="ActiveRecord::RecordNotFound", raised_in_library=True, **kwargs) is None
    assert find_origin(error_class="Stripe::InvalidRequestError", raised_in_library=False, **kwargs) is None
