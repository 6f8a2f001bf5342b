"""A small Django shop, run under the New Relic agent to capture what the agent reports."""

import os

BASE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEBUG = False
SECRET_KEY = os.environ.get("SHOP_SECRET_KEY", "capture-only-not-a-secret")
ALLOWED_HOSTS = ["shop.example.com"]
ROOT_URLCONF = "shop.urls"
INSTALLED_APPS = ["django.contrib.contenttypes", "django.contrib.auth", "rest_framework", "shop"]
MIDDLEWARE = ["django.middleware.common.CommonMiddleware"]
DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": os.environ.get("SHOP_DB", os.path.join(BASE_DIR, "shop.sqlite3")),
        "OPTIONS": {"timeout": 0.2},
    }
}
USE_TZ = True
DEFAULT_AUTO_FIELD = "django.db.models.AutoField"
LOGGING = {"version": 1, "disable_existing_loggers": True}
