"""The offline model's Python origin rules, on the code of applications run under the real agent (the capture apps
and the Python demo), with the frames the agent reported for them."""

from __future__ import annotations

from pathlib import Path

import pytest

from nightwatch.offline.python_origins import (
    Found,
    PyFrame,
    python_origin,
    reversed_route,
    route_origin,
    unique_column,
    validator_origin,
)

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "nightwatch" / "demo_python" / "app"
CAPTURED = ROOT / "scripts" / "newrelic_capture" / "apps"


def frame(root: Path, path: str, line: int) -> PyFrame:
    lines = (root / path).read_text(encoding="utf-8").splitlines()
    return PyFrame(path, line, {n: t for n, t in enumerate(lines, 1)})


def line_of(root: Path, path: str, text: str) -> int:
    return next(n for n, t in enumerate((root / path).read_text(encoding="utf-8").splitlines(), 1) if text in t)


def test_a_none_passed_straight_on_is_followed_up_to_the_call_that_produced_it() -> None:
    frames = [frame(DEMO, "bookshop/pricing.py", line_of(DEMO, "bookshop/pricing.py", "code.strip()")),
              frame(DEMO, "bookshop/pricing.py", line_of(DEMO, "bookshop/pricing.py", "normalise_coupon(code)")),
              frame(DEMO, "bookshop/app.py", line_of(DEMO, "bookshop/app.py", 'payload.get("code")'))]
    found = python_origin("builtins:AttributeError", "'NoneType' object has no attribute 'strip'", frames)
    assert found and (found.file, found.line) == ("bookshop/app.py", frames[2].line)
    assert 'payload.get("code")' in found.note and "`discount`" in found.note


def test_a_none_passed_by_keyword_and_one_that_is_a_local_value() -> None:
    callee = PyFrame("a.py", 2, {1: "def shout(word: str | None, times=1):", 2: "    return word.upper() * times"})
    caller = PyFrame("b.py", 2, {1: "def view(request):", 2: "    return shout(times=2, word=request.GET.get('w'))"})
    found = python_origin("builtins:AttributeError", "'NoneType' object has no attribute 'upper'", [callee, caller])
    assert found and (found.file, found.line) == ("b.py", 2) and "request.GET.get('w')" in found.note
    # Django's InvoiceView: the None is an attribute of a local value, not a parameter: not these rules' to follow
    view = line_of(CAPTURED, "django_shop/shop/views.py", "invoice.customer.upper()")
    local = python_origin("builtins:AttributeError", "'NoneType' object has no attribute 'upper'",
                          [frame(CAPTURED, "django_shop/shop/views.py", view)])
    assert local is None


def test_a_quoted_bad_value_leads_to_the_literal_that_wrote_it_and_a_value_from_the_request_leads_nowhere() -> None:
    crash = frame(DEMO, "bookshop/app.py", line_of(DEMO, "bookshop/app.py", "date.fromisoformat(since)"))
    found = python_origin("builtins:ValueError", "Invalid isoformat string: 'last-month'", [crash])
    assert found and found.line == line_of(DEMO, "bookshop/app.py", 'since: str = "last-month"')
    parsed = frame(CAPTURED, "django_shop/shop/views.py", line_of(CAPTURED, "django_shop/shop/views.py", "int(request.query_params"))
    assert python_origin("builtins:ValueError", "invalid literal for int() with base 10: 'ten'", [parsed]) is None


def test_a_key_missing_from_a_module_table_leads_to_the_table() -> None:
    crash = frame(CAPTURED, "django_shop/shop/pricing.py", line_of(CAPTURED, "django_shop/shop/pricing.py", "RATES[line"))
    found = python_origin("builtins:KeyError", "'GBP'", [crash])
    assert found and found.line == line_of(CAPTURED, "django_shop/shop/pricing.py", "RATES = {") and "'GBP'" in found.note
    local = PyFrame("c.py", 2, {1: "def f(rates):", 2: "    return rates['GBP']"})
    assert python_origin("builtins:KeyError", "'GBP'", [local]) is None


def test_ruby_frames_are_not_these_rules_to_read() -> None:
    ruby = PyFrame("app/models/order.rb", 2, {1: "def total(code)", 2: "  code.strip"})
    assert python_origin("NoMethodError", "'NoneType' object has no attribute 'strip'", [ruby]) is None


def test_an_assertion_on_a_models_attribute_leads_to_the_field_bound_that_admits_what_it_rejects() -> None:
    callee = PyFrame("pricing.py", 2, {1: "def line_total(price, quantity):", 2: "    assert quantity > 0, 'positive'"})
    caller = PyFrame("orders.py", 8, {1: "class Line(BaseModel):", 2: "    price: float", 3: "    quantity: int = Field(ge=0)",
                                      7: "def total(order):", 8: "    return sum(line_total(l.price, l.quantity) for l in order.lines)"})
    found = python_origin("builtins:AssertionError", "positive", [callee, caller])
    assert found is not None and (found.file, found.line) == ("orders.py", 3) and "ge=0" in found.note
    strict = PyFrame("orders.py", 8, {**caller.source, 3: "    quantity: int = Field(gt=0)"})
    assert python_origin("builtins:AssertionError", "positive", [callee, strict]) is None  # gt=0 admits nothing it rejects


def test_a_string_in_arithmetic_leads_to_the_csv_reader_that_made_the_rows() -> None:
    from nightwatch.offline.python_origins import producer_origin, row_producer

    crash = PyFrame("reports.py", 4, {1: "def weekly(report):", 2: "    totals = {}", 3: "    for row in storage.rows(report):",
                                      4: "        totals[row['isbn']] = totals.get(row['isbn'], 0) + row['quantity']"})
    message = "unsupported operand type(s) for +: 'int' and 'str'"
    assert row_producer(message, crash) == "rows"
    assert row_producer("division by zero", crash) is None
    storage = {1: "import csv", 4: "def rows(report):", 5: "    return list(csv.DictReader(io.StringIO(report)))",
               8: "def other():", 9: "    return csv.reader(x)"}
    found = producer_origin("rows", "storage.py", storage)
    assert found is not None and (found.file, found.line) == ("storage.py", 5)
    assert producer_origin("rows", "storage.py", {4: "def rows(report):", 5: "    return json.loads(report)"}) is None


def test_a_no_reverse_match_leads_to_the_route_string_of_the_named_pattern() -> None:
    message = ("Reverse for 'order-detail' with keyword arguments '{'order_id': 'A-17'}' not found. 1 pattern(s) tried: "
               "['orders/(?P<order_id>[0-9]+)/\\\\Z']")
    assert reversed_route("django.urls.exceptions:NoReverseMatch", message) == "order-detail"
    assert reversed_route("builtins:KeyError", message) is None
    urls = frame(CAPTURED, "django_shop/shop/urls.py", 1).source
    found = route_origin("order-detail", "django_shop/shop/urls.py", urls)
    assert found and found.line == line_of(CAPTURED, "django_shop/shop/urls.py", '"orders/<int:order_id>/"')
    assert route_origin("no-such-name", "django_shop/shop/urls.py", urls) is None


def test_a_pattern_declared_over_several_lines_is_found_by_its_route_string_not_its_name() -> None:
    source = dict(enumerate(['urlpatterns = [', '    path(', '        "check_token/<slug:username>/<str:token>/",',
                             '        views.check_token,', '        name="hc-check-token",', '    ),', ']'], 1))
    found = route_origin("hc-check-token", "hc/accounts/urls.py", source)
    assert found and found.line == 3 and "reverse()" in found.note


def test_an_error_that_quotes_a_name_not_a_value_leads_to_no_literal() -> None:
    # `'place'` is the attribute's name: the `data["place"]` above the crash line is not where a value came from
    crash = PyFrame("app/users.py", 4, {1: "def public(user):", 2: '    data["place"] = None', 3: "    account = user.account",
                                        4: "    return account.place"})
    assert python_origin("builtins:AttributeError", "'NoneType' object has no attribute 'place'", [crash]) is None
    assert python_origin("builtins:ValueError", "unknown field: 'place'", [crash]) == \
        Found("app/users.py", 2, "the value 'place' the error quotes is written here")


@pytest.mark.parametrize("message", [
    "(sqlite3.IntegrityError) UNIQUE constraint failed: users.email\n[SQL: INSERT INTO users (name, email) VALUES (?, ?)]",
    'duplicate key value violates unique constraint "accounts_user_email_key"\nDETAIL:  Key (email)=(a@b.example) already exists.',
    "(1062, \"Duplicate entry 'a@b.example' for key 'users.email'\")",
])
def test_a_unique_constraint_names_its_column_in_each_databases_words(message: str) -> None:
    assert unique_column("sqlalchemy.exc:IntegrityError", message) == "email"
    assert unique_column("builtins:ValueError", message) is None


SCHEMA = '''class UserSchema(Schema):
    @pre_load
    def validate_name(self, data):
        name = data.get("name")
        if Users.query.filter_by(name=name).first():
            raise ValidationError("taken")

    @pre_load
    def validate_email(self, data):
        email = data.get("email")
        existing = Users.query.filter_by(email=email).first()
        if existing and existing.id != current_user().id:
            raise ValidationError("taken")

    def dump(self):
        return Users.query.filter_by(email=self.email)
'''


def test_a_unique_violation_leads_to_the_uniqueness_check_of_its_columns_validator() -> None:
    source = dict(enumerate(SCHEMA.splitlines(), 1))
    found = validator_origin("email", "app/schemas.py", source)
    assert found == Found("app/schemas.py", 11, found.note) and "duplicate got through" in found.note  # not line 16
    form = {1: "class SignupForm(forms.Form):", 2: "    def clean_email(self):", 3: "        return self.cleaned_data['email']"}
    assert validator_origin("email", "app/forms.py", form) == Found("app/forms.py", 2, "`email` is validated here, "
                                                                    "and a duplicate got through to the insert")
    assert validator_origin("phone", "app/schemas.py", source) is None
