from django.urls import path
from rest_framework.routers import SimpleRouter

from shop import views

router = SimpleRouter()
router.register("api/products", views.ProductViewSet, basename="product")

urlpatterns = [
    path("orders/<int:order_id>/", views.order_detail, name="order-detail"),
    path("invoices/<int:pk>/", views.InvoiceView.as_view(), name="invoice"),
    path("report/", views.report),
    path("stock/", views.stock_update),
    path("upload/", views.upload),
    *router.urls,
]
