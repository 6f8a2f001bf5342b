from django.db import connection, transaction
from django.http import HttpResponse, JsonResponse
from django.urls import reverse
from django.views import View
from rest_framework import viewsets
from rest_framework.response import Response

from shop.models import Invoice, Product
from shop.pricing import order_total

ORDERS = {7: {"lines": [{"quantity": 2, "unit_price": 5.0, "currency": "GBP"}]}}


def order_detail(request, order_id):
    order = ORDERS[order_id]
    return JsonResponse({"total": order_total(order)})


class InvoiceView(View):
    def get(self, request, pk):
        invoice = Invoice.objects.filter(pk=pk).first()
        return JsonResponse({"customer": invoice.customer.upper()})


def report(request):
    link = reverse("order-detail", args=[request.GET.get("order", "latest")])
    return HttpResponse(link)


def stock_update(request):
    with transaction.atomic():
        Product.objects.filter(pk=1).update(stock=0)
    return HttpResponse("ok")


def upload(request):
    return HttpResponse(str(len(request.body)))


class ProductViewSet(viewsets.ViewSet):
    def retrieve(self, request, pk=None):
        limit = int(request.query_params.get("limit", "10"))
        return Response({"id": pk, "limit": limit})


def ensure_tables() -> None:
    with connection.schema_editor() as editor:
        for model in (Product, Invoice):
            editor.create_model(model)
    Product.objects.create(name="lamp", stock=3)
    Invoice.objects.create(number="A-1", customer=None)
