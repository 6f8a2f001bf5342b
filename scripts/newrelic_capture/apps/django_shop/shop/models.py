from django.db import models


class Product(models.Model):
    name = models.CharField(max_length=100)
    stock = models.IntegerField(default=0)


class Invoice(models.Model):
    number = models.CharField(max_length=20)
    customer = models.CharField(max_length=100, null=True)
