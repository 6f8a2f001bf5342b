def test_price_in_euros_and_dollars(client):
    assert client.get("/books/9780553418026/price").json()["price"] == 12.0
    assert client.get("/books/9780553418026/price?currency=USD").json()["price"] == 12.96


def test_unknown_book_is_404(client):
    assert client.get("/books/0000000000000/price").status_code == 404


def test_order_total_with_a_coupon(client):
    order = {"lines": [{"isbn": "9780141439518", "unit_price": 9.5, "quantity": 2}], "coupon": " welcome10 "}
    assert client.post("/orders/total", json=order).json() == {"total": 17.1}


def test_shipping_is_shared_by_the_items_shipped(client):
    order = {"lines": [{"isbn": "a", "unit_price": 1, "quantity": 2}, {"isbn": "b", "unit_price": 1, "quantity": 1}],
             "backordered": ["b"]}
    assert client.post("/orders/shipping", json=order).json() == {"per_item": 2.25}


def test_a_coupon_is_checked_case_insensitively(client):
    assert client.post("/coupons/check", json={"code": "bookworm"}).json() == {"discount": 0.15}


def test_an_author_debut_is_the_first_book(client):
    assert client.get("/authors/jane-austen/debut").json()["title"] == "Pride and Prejudice"


def test_reserving_stock(client):
    assert client.post("/stock/9780553418026/reserve?quantity=2").json() == {"reserved": 2}
